/**
 * What the fake Slack remembers: every message per channel (bot replies, messages a test says a
 * user wrote, ephemerals), each with its edit history, plus the users and channels that
 * users.info and conversations.info describe.
 */
import { nextSlackTs } from './ts.ts';

interface MessageVersion {
  text: string;
  blocks: unknown[];
  /** The method that produced this version (chat.postMessage, chat.update, chat.appendStream, …). */
  by: string;
  at: number;
}

export interface StoredMessage {
  team: string;
  channel: string;
  ts: string;
  /** The parent's ts for a thread reply (absent on top-level messages and on parents). */
  thread_ts?: string;
  /** Author: a user id, or the bot user for the app's own messages. */
  user: string;
  /** Set on messages the app (or another bot) posted. */
  bot_id?: string;
  /** The current visible text. */
  text: string;
  blocks: unknown[];
  /** Every version, oldest first; `history[0]` is the message as first posted. */
  history: MessageVersion[];
  /** Number of edits after the first post (chat.update, stream appends). */
  edits: number;
  deleted: boolean;
  /** Set on chat.postEphemeral messages: only this user saw it. */
  ephemeralFor?: string;
  /** Messages made by chat.startStream are 'in_progress' until chat.stopStream. */
  streaming?: 'in_progress' | 'completed';
  /** Non-text chunks a stream carried (task_update, plan_update, blocks), in order. */
  chunks?: Array<Record<string, unknown>>;
  /** Reaction name → users who reacted. */
  reactions: Record<string, string[]>;
  /**
   * Message metadata posted with the message (chat.postMessage `metadata`): returned by
   * conversations.history / conversations.replies only with `include_all_metadata`.
   */
  metadata?: { event_type: string; event_payload: Record<string, unknown> };
  /**
   * Files shared with the message: a person's (a `file_share` event's file objects) or the app's
   * (files.completeUploadExternal: ids, names and sizes). Reads return them.
   */
  files?: Array<Record<string, unknown>>;
}

/** A file from files.getUploadURLExternal until files.completeUploadExternal shares it. */
export interface PendingFile {
  id: string;
  team: string;
  filename: string;
  /** The `length` the app declared; the upload must be exactly this many bytes. */
  length: number;
  /** The path of its upload URL on the fake. */
  uploadPath: string;
  /** The bytes POSTed to the upload URL, once they were. */
  bytes?: Buffer;
  /** Set once completed: a file id is good for one completion. */
  completed: boolean;
}

/** A file shared into a conversation: what a person in it would see and download. */
export interface SharedFile {
  id: string;
  team: string;
  filename: string;
  title: string;
  bytes: Buffer;
  /** Absent when completed without a channel (a private file). */
  channel?: string;
  thread_ts?: string;
  initial_comment?: string;
  /** The message that shows it in the channel. */
  ts?: string;
}

export interface SlackUser {
  id: string;
  team_id: string;
  name: string;
  real_name: string;
  is_bot: boolean;
  tz: string;
  /** A deactivated account (the user object's `deleted`): it stays listed, and no longer signs in. */
  deleted?: boolean;
}

export interface SlackChannel {
  id: string;
  name: string;
  is_im: boolean;
  is_private: boolean;
  is_archived: boolean;
  /** For a DM: the other member. */
  user?: string;
}

export class SlackWorld {
  readonly messages: StoredMessage[] = [];
  readonly users = new Map<string, SlackUser>();
  readonly channels = new Map<string, SlackChannel>();
  /** Channels the bot is not a member of: posting there answers `not_in_channel`, as in Slack. */
  readonly botNotIn = new Set<string>();
  /** Agent sessions by `channel:thread_ts`, with every status they were set to, in order. */
  readonly sessions = new Map<string, { status: string; title?: string; initiator?: string; history: string[] }>();
  /** Suggested prompts set per assistant thread (`channel:thread_ts`). */
  readonly suggestedPrompts = new Map<string, { title?: string; prompts: Array<{ title: string; message: string }> }>();
  /** Whether the app subscribes to agent_session_stopped (without it setStatus carries a warning). */
  subscribedToSessionStopped = true;

  setSession(channel: string, thread: string, status: string, title?: string, initiator?: string) {
    const key = `${channel}:${thread}`;
    const existing = this.sessions.get(key);
    if (existing) {
      existing.status = status;
      existing.history.push(status);
      return existing;
    }
    const created = { status, ...(title ? { title } : {}), ...(initiator ? { initiator } : {}), history: [status] };
    this.sessions.set(key, created);
    return created;
  }

  /**
   * Members of conversations a test set (see `leave`). Without one, conversations.members lists a
   * DM's person, or everyone who has written in the channel; the app is in every conversation it
   * is not kept out of (`botNotIn`).
   */
  readonly memberships = new Map<string, Set<string>>();

  membersOf(channel: string, botUserId: string): string[] {
    const set = this.memberships.get(channel);
    if (set) return [...set];
    const found = this.channel(channel);
    const people = found?.is_im
      ? [found.user ?? 'U0ALICE001']
      : this.messages.filter((m) => m.channel === channel && !m.bot_id && !m.ephemeralFor).map((m) => m.user);
    return [...new Set([...people, ...(this.botNotIn.has(channel) ? [] : [botUserId])])];
  }

  /** `user` leaves `channel` (as `/leave` does): conversations.members no longer lists them. */
  leave(channel: string, user: string, botUserId: string): void {
    const members = new Set(this.membersOf(channel, botUserId));
    members.delete(user);
    this.memberships.set(channel, members);
  }

  /** Files given an upload URL and not yet shared, by id. */
  readonly pendingFiles = new Map<string, PendingFile>();
  /** Files shared (files.completeUploadExternal), oldest first, with their bytes. */
  readonly uploads: SharedFile[] = [];

  /** Modals opened with views.open, oldest first. */
  readonly views: Array<Record<string, unknown> & { id: string; trigger_id: string }> = [];
  /** User groups (S…) by id: their handle, members and workspace (usergroups.list). */
  readonly userGroups = new Map<string, { id: string; team: string; handle: string; users: string[] }>();

  addUserGroup(team: string, handle: string, users: string[]): string {
    const id = `S0${handle
      .toUpperCase()
      .replace(/[^A-Z0-9]/g, '')
      .slice(0, 7)
      .padEnd(7, '0')}`;
    this.userGroups.set(id, { id, team, handle, users });
    return id;
  }

  add(
    message: Omit<StoredMessage, 'ts' | 'history' | 'edits' | 'deleted' | 'reactions'> & { ts?: string },
    by: string,
  ): StoredMessage {
    const stored: StoredMessage = {
      ...message,
      ts: message.ts ?? nextSlackTs(),
      history: [{ text: message.text, blocks: message.blocks, by, at: Date.now() }],
      edits: 0,
      deleted: false,
      reactions: {},
    };
    this.messages.push(stored);
    return stored;
  }

  /**
   * Who a message notified when it was posted (Slack's "Formatting text for app surfaces": a user is
   * mentioned, and notified, by `<@U…>` — optionally `<@U…|label>` — in the message's `text` or in a
   * mrkdwn text object of its blocks, or by a rich_text `user` element). Edits notify nobody new, so
   * only the first version counts; plain_text objects never mention.
   */
  notified(message: StoredMessage): string[] {
    const first = message.history[0]!;
    const users = new Set<string>();
    const fromMrkdwn = (text: string) => {
      for (const m of text.matchAll(/<@([UW][A-Z0-9]{2,})(?:\|[^>]*)?>/g)) users.add(m[1]!);
    };
    fromMrkdwn(first.text);
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(walk);
      if (!node || typeof node !== 'object') return;
      const object = node as Record<string, unknown>;
      if (object.type === 'mrkdwn' && typeof object.text === 'string') fromMrkdwn(object.text);
      if (object.type === 'user' && typeof object.user_id === 'string') users.add(object.user_id);
      for (const value of Object.values(object)) if (value && typeof value === 'object') walk(value);
    };
    walk(first.blocks);
    return [...users];
  }

  /** A message visible in the channel (ephemerals and deleted messages are not). */
  find(channel: string, ts: string): StoredMessage | undefined {
    return this.messages.find((m) => m.channel === channel && m.ts === ts && !m.deleted && !m.ephemeralFor);
  }

  edit(message: StoredMessage, change: { text: string; blocks: unknown[] }, by: string): void {
    message.text = change.text;
    message.blocks = change.blocks;
    message.edits += 1;
    message.history.push({ text: change.text, blocks: change.blocks, by, at: Date.now() });
  }

  /** A thread as conversations.replies lists it: the parent first, then replies oldest first. */
  thread(channel: string, threadTs: string): StoredMessage[] {
    const parent = this.find(channel, threadTs);
    if (!parent) return [];
    const replies = this.visible(channel).filter((m) => m.thread_ts === threadTs && m.ts !== threadTs);
    return [parent, ...replies.sort(byTs)];
  }

  /** Top-level messages of a channel, newest first, as conversations.history lists them. */
  channelHistory(channel: string): StoredMessage[] {
    return this.visible(channel)
      .filter((m) => m.thread_ts === undefined || m.thread_ts === m.ts)
      .sort(byTs)
      .reverse();
  }

  replyCount(channel: string, ts: string): StoredMessage[] {
    return this.visible(channel).filter((m) => m.thread_ts === ts && m.ts !== ts);
  }

  visible(channel: string): StoredMessage[] {
    return this.messages.filter((m) => m.channel === channel && !m.deleted && !m.ephemeralFor);
  }

  user(id: string, team: string): SlackUser | undefined {
    const known = this.users.get(id);
    if (known) return known;
    // Any well-formed user id exists, so tests need not declare every person they mention.
    if (!/^[UW][A-Z0-9]{2,}$/.test(id)) return undefined;
    const name = id.toLowerCase();
    return { id, team_id: team, name, real_name: `User ${id}`, is_bot: false, tz: 'Etc/UTC' };
  }

  channel(id: string): SlackChannel | undefined {
    const known = this.channels.get(id);
    if (known) return known;
    // C… public channel, G… private channel, D… DM: Slack's id prefixes.
    if (!/^[CGD][A-Z0-9]{2,}$/.test(id)) return undefined;
    return {
      id,
      name: id.startsWith('D') ? id : `channel-${id.toLowerCase()}`,
      is_im: id.startsWith('D'),
      is_private: !id.startsWith('C'),
      is_archived: false,
    };
  }
}

function byTs(a: StoredMessage, b: StoredMessage): number {
  return a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0;
}
