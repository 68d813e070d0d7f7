/**
 * The Web API methods the fake answers, each in Slack's documented response shape. Handlers get
 * the parsed arguments and the calling workspace; authentication and rate limiting happen before
 * (in fake-slack.ts). Errors are `{ok:false, error}` with HTTP 200, as Slack sends them.
 */
import { checkMessage } from './message-rules.ts';
import type { SlackWorld, StoredMessage } from './world.ts';

export interface Workspace {
  team: string;
  name: string;
  botToken: string;
}

export interface CallContext {
  world: SlackWorld;
  workspace: Workspace;
  botUserId: string;
  botId: string;
  appId: string;
  /** Whether chat.startStream / appendStream / stopStream exist (off: `unknown_method`). */
  streaming: boolean;
  /** Whether the app is declared as an agent (agent sessions need it). */
  agent: boolean;
  /** Issues a one-time Socket Mode URL (apps.connections.open). */
  openConnection(): string;
  /** A fresh upload URL on the fake (files.getUploadURLExternal): the full URL and its path. */
  uploadUrl(): { url: string; path: string };
  /** The bot token's scopes, when the test gave them; undefined: every method is allowed. */
  scopes: ReadonlySet<string> | undefined;
}

type Answer = { ok: true } & Record<string, unknown>;
type Failure = { ok: false; error: string } & Record<string, unknown>;
type Handler = (args: Record<string, unknown>, ctx: CallContext) => Answer | Failure;

/** markdown_text on the streaming methods is limited to 12,000 characters. */
const STREAM_MARKDOWN_MAX = 12_000;

const fail = (error: string, extra: Record<string, unknown> = {}): Failure => ({ ok: false, error, ...extra });
const str = (v: unknown): string | undefined =>
  typeof v === 'string' && v.length > 0 ? v : typeof v === 'number' ? String(v) : undefined;
const blocksOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/**
 * A message's metadata as chat.postMessage takes it (docs.slack.dev, "Using message metadata"): an
 * object with an `event_type` (letters, digits and underscores) and an `event_payload` object;
 * anything else is refused with `invalid_metadata_format`.
 */
function metadataOf(value: unknown): StoredMessage['metadata'] | Failure | undefined {
  if (value === undefined) return undefined;
  const m = value as { event_type?: unknown; event_payload?: unknown } | null;
  const typed = typeof m?.event_type === 'string' && /^[A-Za-z0-9_]{1,255}$/.test(m.event_type);
  const payload = m?.event_payload;
  if (!typed || typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    return fail('invalid_metadata_format');
  }
  return { event_type: m.event_type as string, event_payload: payload as Record<string, unknown> };
}

/** A history or replies listing's message, with its metadata only when `include_all_metadata` asked. */
function listedJson(m: StoredMessage, args: Record<string, unknown>, ctx: CallContext): Record<string, unknown> {
  const withMetadata = args.include_all_metadata === true || args.include_all_metadata === 'true';
  return { ...messageJson(m, ctx), ...(withMetadata && m.metadata ? { metadata: m.metadata } : {}) };
}

function messageJson(m: StoredMessage, ctx: CallContext): Record<string, unknown> {
  const replies = ctx.world.replyCount(m.channel, m.ts);
  return {
    type: 'message',
    // The app's own posts carry bot_id and app_id; other bots' posts are subtype bot_message.
    ...(m.bot_id && m.user === ctx.botUserId ? { bot_id: m.bot_id, app_id: ctx.appId } : {}),
    ...(m.bot_id && m.user !== ctx.botUserId ? { subtype: 'bot_message', bot_id: m.bot_id } : {}),
    user: m.user,
    text: m.text,
    ...(m.blocks.length ? { blocks: m.blocks } : {}),
    ts: m.ts,
    team: m.team,
    ...(m.thread_ts ? { thread_ts: m.thread_ts, parent_user_id: ctx.world.find(m.channel, m.thread_ts)?.user } : {}),
    ...(replies.length
      ? {
          thread_ts: m.ts,
          reply_count: replies.length,
          reply_users: [...new Set(replies.map((r) => r.user))],
          latest_reply: replies.at(-1)?.ts,
        }
      : {}),
    ...(m.edits > 0 && !m.streaming
      ? { edited: { user: m.user, ts: `${Math.floor(lastEditAt(m) / 1000)}.000000` } }
      : {}),
    ...(Object.keys(m.reactions).length
      ? { reactions: Object.entries(m.reactions).map(([name, users]) => ({ name, users, count: users.length })) }
      : {}),
    ...(m.streaming ? { streaming_state: m.streaming } : {}),
    // A message with files (file_share) keeps them in reads: the file objects its event carried.
    ...(m.files?.length ? { files: m.files } : {}),
  };
}

const lastEditAt = (m: StoredMessage): number => m.history.at(-1)?.at ?? 0;

function requireChannel(args: Record<string, unknown>, ctx: CallContext): Failure | string {
  const channel = str(args.channel);
  if (!channel || !ctx.world.channel(channel)) return fail('channel_not_found');
  if (ctx.world.channel(channel)?.is_archived) return fail('is_archived');
  return channel;
}

/** Slack refuses a bot's post in a public channel it has not joined (a private one it cannot see at all). */
function requireMembership(channel: string, ctx: CallContext): Failure | undefined {
  if (!ctx.world.botNotIn.has(channel)) return undefined;
  return fail(channel.startsWith('C') ? 'not_in_channel' : 'channel_not_found');
}

function ownMessage(args: Record<string, unknown>, ctx: CallContext): Failure | StoredMessage {
  const channel = requireChannel(args, ctx);
  if (typeof channel !== 'string') return channel;
  const ts = str(args.ts);
  const message = ts ? ctx.world.find(channel, ts) : undefined;
  if (!message) return fail('message_not_found');
  if (message.user !== ctx.botUserId) return fail('cant_update_message');
  return message;
}

/** Text of the markdown_text argument plus any markdown_text chunks, in order. */
function streamText(args: Record<string, unknown>): string {
  const chunks = Array.isArray(args.chunks) ? (args.chunks as Array<Record<string, unknown>>) : [];
  const fromChunks = chunks.filter((c) => c?.type === 'markdown_text').map((c) => String(c.text ?? ''));
  return [typeof args.markdown_text === 'string' ? args.markdown_text : '', ...fromChunks].join('');
}

const TASK_STATUSES = new Set(['pending', 'in_progress', 'complete', 'error']);
/** Task texts (details, output) are at most this long. */
const TASK_TEXT_MAX = 256;

/**
 * The streaming methods' `chunks` (docs.slack.dev chat.appendStream "Using the chunks parameter"):
 * markdown_text {text}, task_update {id, title, status, details?, output?}, plan_update {title},
 * blocks {blocks}. The first problem found, as Slack reports invalid arguments.
 */
function chunkProblem(chunks: unknown): string | undefined {
  if (chunks === undefined) return undefined;
  if (!Array.isArray(chunks)) return 'chunks must be an array';
  for (const [i, c] of chunks.entries()) {
    if (typeof c !== 'object' || c === null) return `chunks[${i}] must be an object`;
    const chunk = c as Record<string, unknown>;
    switch (chunk.type) {
      case 'markdown_text':
        if (typeof chunk.text !== 'string') return `chunks[${i}].text is required`;
        break;
      case 'task_update':
        if (typeof chunk.id !== 'string' || !chunk.id) return `chunks[${i}].id is required`;
        if (typeof chunk.title !== 'string' || !chunk.title) return `chunks[${i}].title is required`;
        if (!TASK_STATUSES.has(String(chunk.status)))
          return `chunks[${i}].status must be pending, in_progress, complete or error`;
        for (const field of ['details', 'output'] as const) {
          const v = chunk[field];
          if (v !== undefined && (typeof v !== 'string' || v.length > TASK_TEXT_MAX))
            return `chunks[${i}].${field} must be a string of at most ${TASK_TEXT_MAX} characters`;
        }
        break;
      case 'plan_update':
        if (typeof chunk.title !== 'string' || !chunk.title) return `chunks[${i}].title is required`;
        break;
      case 'blocks':
        if (!Array.isArray(chunk.blocks)) return `chunks[${i}].blocks must be an array`;
        break;
      default:
        return `chunks[${i}].type is not a known chunk type`;
    }
  }
  return undefined;
}

/** The non-text chunks a streaming call carries, for the message's record. */
function otherChunks(args: Record<string, unknown>): Array<Record<string, unknown>> {
  return Array.isArray(args.chunks)
    ? (args.chunks as Array<Record<string, unknown>>).filter((c) => c.type !== 'markdown_text')
    : [];
}

function streamArgsProblem(args: Record<string, unknown>, required: boolean): Failure | undefined {
  const text = typeof args.markdown_text === 'string' ? args.markdown_text : '';
  if (text.length > STREAM_MARKDOWN_MAX) return fail('msg_too_long');
  const chunks = chunkProblem(args.chunks);
  if (chunks) return fail('invalid_arguments', { response_metadata: { messages: [`[ERROR] ${chunks}`] } });
  if (required && !text && !Array.isArray(args.chunks)) {
    return fail('invalid_arguments', {
      response_metadata: { messages: ['[ERROR] either markdown_text or chunks is required'] },
    });
  }
  return undefined;
}

/**
 * Slack's answer to a token without the scope a method needs (`missing_scope`, with `needed` and
 * `provided`), when the test declared the token's scopes.
 */
function requireScope(scope: string, ctx: CallContext): Failure | undefined {
  if (!ctx.scopes || ctx.scopes.has(scope)) return undefined;
  return fail('missing_scope', { needed: scope, provided: [...ctx.scopes].join(',') });
}

let fileCounter = 0;
/** A file id as Slack writes them: F and ten more characters. */
const nextFileId = () => `F0${String(++fileCounter).padStart(9, '0')}`;

const fileToComplete = (v: unknown): { id: string; title?: string } | undefined => {
  if (typeof v !== 'object' || v === null) return undefined;
  const { id, title } = v as { id?: unknown; title?: unknown };
  if (typeof id !== 'string' || !id) return undefined;
  return typeof title === 'string' ? { id, title } : { id };
};

/**
 * files.getUploadURLExternal (files:write): `filename` and `length` (the exact byte count) are
 * required; the answer is a single-use upload URL and the file's id.
 */
const getUploadUrlExternal: Handler = (args, ctx) => {
  const missing = requireScope('files:write', ctx);
  if (missing) return missing;
  const filename = str(args.filename);
  const length = Number(args.length);
  if (!filename || args.length === undefined || !Number.isInteger(length) || length < 0)
    return fail('invalid_arguments', {
      response_metadata: { messages: ['[ERROR] filename and a whole-number length are required'] },
    });
  const id = nextFileId();
  const { url, path } = ctx.uploadUrl();
  ctx.world.pendingFiles.set(id, {
    id,
    team: ctx.workspace.team,
    filename,
    length,
    uploadPath: path,
    completed: false,
  });
  return { ok: true, upload_url: url, file_id: id };
};

/**
 * files.completeUploadExternal (files:write): shares uploaded files in `channel_id` (a thread with
 * `thread_ts`), with `initial_comment` as the message text. The app must be in the channel, as for
 * posting; each file id completes once, and only after its bytes were uploaded.
 */
const completeUploadExternal: Handler = (args, ctx) => {
  const missing = requireScope('files:write', ctx);
  if (missing) return missing;
  const files = Array.isArray(args.files) ? args.files.map(fileToComplete) : [];
  if (!files.length || files.some((f) => f === undefined))
    return fail('invalid_arguments', { response_metadata: { messages: ['[ERROR] files must be [{id, title?}]'] } });
  const threadTs = str(args.thread_ts);
  let channel: string | undefined;
  if (args.channel_id !== undefined) {
    const found = requireChannel({ channel: args.channel_id }, ctx);
    if (typeof found !== 'string') return found;
    const notMember = requireMembership(found, ctx);
    if (notMember) return notMember;
    channel = found;
  } else if (threadTs) {
    return fail('invalid_arguments', { response_metadata: { messages: ['[ERROR] thread_ts needs channel_id'] } });
  }
  const pending = files.map((f) => ctx.world.pendingFiles.get(f!.id));
  for (const file of pending) {
    if (!file || file.team !== ctx.workspace.team || file.completed || !file.bytes) return fail('file_not_found');
  }
  const comment = str(args.initial_comment);
  const shared = files.map((f, i) => {
    const file = pending[i]!;
    file.completed = true;
    return { id: file.id, name: file.filename, title: f!.title ?? file.filename, size: file.bytes!.length };
  });
  const message = channel
    ? ctx.world.add(
        {
          team: ctx.workspace.team,
          channel,
          ...(threadTs ? { thread_ts: threadTs } : {}),
          user: ctx.botUserId,
          bot_id: ctx.botId,
          text: comment ?? '',
          blocks: [],
          files: shared,
        },
        'files.completeUploadExternal',
      )
    : undefined;
  for (const [i, f] of shared.entries()) {
    ctx.world.uploads.push({
      id: f.id,
      team: ctx.workspace.team,
      filename: f.name,
      title: f.title,
      bytes: pending[i]!.bytes!,
      ...(channel ? { channel } : {}),
      ...(threadTs ? { thread_ts: threadTs } : {}),
      ...(comment ? { initial_comment: comment } : {}),
      ...(message ? { ts: message.ts } : {}),
    });
  }
  return {
    ok: true,
    files: shared.map((f) => ({ id: f.id, name: f.name, title: f.title, size: f.size, mode: 'hosted' })),
  };
};

const streamingOnly =
  (handler: Handler): Handler =>
  (args, ctx) =>
    ctx.streaming ? handler(args, ctx) : fail('unknown_method');

export const METHODS: Record<string, Handler> = {
  'auth.test': (_args, ctx) => ({
    ok: true,
    url: `https://${ctx.workspace.name}.slack.com/`,
    team: ctx.workspace.name,
    user: 'countersign',
    team_id: ctx.workspace.team,
    user_id: ctx.botUserId,
    bot_id: ctx.botId,
    is_enterprise_install: false,
  }),

  'apps.connections.open': (_args, ctx) => ({ ok: true, url: ctx.openConnection() }),

  'files.getUploadURLExternal': getUploadUrlExternal,
  'files.completeUploadExternal': completeUploadExternal,

  'chat.postMessage': (args, ctx) => {
    const channel = requireChannel(args, ctx);
    if (typeof channel !== 'string') return channel;
    const notMember = requireMembership(channel, ctx);
    if (notMember) return notMember;
    const violation = checkMessage(args.text, args.blocks);
    if (violation)
      return fail(
        violation.error,
        violation.messages.length ? { response_metadata: { messages: violation.messages } } : {},
      );
    const metadata = metadataOf(args.metadata);
    if (metadata && 'ok' in metadata) return metadata;
    const threadTs = str(args.thread_ts);
    const message = ctx.world.add(
      {
        team: ctx.workspace.team,
        channel,
        ...(threadTs ? { thread_ts: threadTs } : {}),
        user: ctx.botUserId,
        bot_id: ctx.botId,
        text: str(args.text) ?? '',
        blocks: blocksOf(args.blocks),
        ...(metadata ? { metadata } : {}),
      },
      'chat.postMessage',
    );
    return { ok: true, channel, ts: message.ts, message: messageJson(message, ctx) };
  },

  'chat.update': (args, ctx) => {
    const message = ownMessage(args, ctx);
    if ('ok' in message) return message;
    const text = args.text === undefined ? message.text : (str(args.text) ?? '');
    const blocks = args.blocks === undefined ? message.blocks : blocksOf(args.blocks);
    const violation = checkMessage(text, blocks);
    if (violation)
      return fail(
        violation.error,
        violation.messages.length ? { response_metadata: { messages: violation.messages } } : {},
      );
    ctx.world.edit(message, { text, blocks }, 'chat.update');
    return { ok: true, channel: message.channel, ts: message.ts, text, message: messageJson(message, ctx) };
  },

  'chat.postEphemeral': (args, ctx) => {
    const channel = requireChannel(args, ctx);
    if (typeof channel !== 'string') return channel;
    const notMember = requireMembership(channel, ctx);
    if (notMember) return notMember;
    const user = str(args.user);
    if (!user || !ctx.world.user(user, ctx.workspace.team)) return fail('user_not_found');
    const violation = checkMessage(args.text, args.blocks);
    if (violation)
      return fail(
        violation.error,
        violation.messages.length ? { response_metadata: { messages: violation.messages } } : {},
      );
    const threadTs = str(args.thread_ts);
    const message = ctx.world.add(
      {
        team: ctx.workspace.team,
        channel,
        ...(threadTs ? { thread_ts: threadTs } : {}),
        user: ctx.botUserId,
        bot_id: ctx.botId,
        text: str(args.text) ?? '',
        blocks: blocksOf(args.blocks),
        ephemeralFor: user,
      },
      'chat.postEphemeral',
    );
    return { ok: true, message_ts: message.ts };
  },

  'chat.delete': (args, ctx) => {
    const message = ownMessage(args, ctx);
    if ('ok' in message) return message.error === 'cant_update_message' ? fail('cant_delete_message') : message;
    message.deleted = true;
    return { ok: true, channel: message.channel, ts: message.ts };
  },

  'conversations.replies': (args, ctx) => {
    const channel = requireChannel(args, ctx);
    if (typeof channel !== 'string') return channel;
    const ts = str(args.ts);
    const thread = ts ? ctx.world.thread(channel, ts) : [];
    if (!thread.length) return fail('thread_not_found');
    // "A message plus all the messages in reply to it": the range narrows the replies; the parent
    // leads whatever it is.
    const [parent, ...replies] = thread;
    return page(
      [parent!, ...replies.filter(inRange(args))].map((m) => listedJson(m, args, ctx)),
      args,
    );
  },

  'conversations.history': (args, ctx) => {
    const channel = requireChannel(args, ctx);
    if (typeof channel !== 'string') return channel;
    const messages = ctx.world.channelHistory(channel).filter(inRange(args));
    return page(
      messages.map((m) => listedJson(m, args, ctx)),
      args,
    );
  },

  'conversations.info': (args, ctx) => {
    const id = str(args.channel);
    const channel = id ? ctx.world.channel(id) : undefined;
    if (!channel) return fail('channel_not_found');
    return {
      ok: true,
      channel: {
        id: channel.id,
        ...(channel.is_im
          ? { is_im: true, user: channel.user ?? 'U0ALICE001', is_org_shared: false, created: 1700000000 }
          : {
              name: channel.name,
              is_channel: !channel.is_private,
              is_group: channel.is_private,
              is_im: false,
              is_mpim: false,
              is_private: channel.is_private,
              is_archived: channel.is_archived,
              is_general: false,
              is_member: true,
              is_shared: false,
              is_ext_shared: false,
              is_org_shared: false,
              context_team_id: ctx.workspace.team,
              created: 1700000000,
              creator: 'U0ADMIN001',
              name_normalized: channel.name,
              topic: { value: '', creator: '', last_set: 0 },
              purpose: { value: '', creator: '', last_set: 0 },
            }),
      },
    };
  },

  // conversations.members (channels:read, groups:read, im:read, mpim:read): user ids, paged by cursor.
  // A private channel the app is not in is not found, as in Slack.
  'conversations.members': (args, ctx) => {
    const id = str(args.channel);
    const channel = id ? ctx.world.channel(id) : undefined;
    if (!id || !channel || (channel.is_private && ctx.world.botNotIn.has(id))) return fail('channel_not_found');
    const members = ctx.world.membersOf(id, ctx.botUserId);
    const limit = Math.min(Math.max(Number(args.limit) || 100, 1), 1000);
    const start = Number(str(args.cursor)?.replace(/^offset:/, '') ?? 0) || 0;
    const more = start + limit < members.length;
    return {
      ok: true,
      members: members.slice(start, start + limit),
      response_metadata: { next_cursor: more ? `offset:${start + limit}` : '' },
    };
  },

  'users.info': (args, ctx) => {
    const id = str(args.user);
    const user = id ? ctx.world.user(id, ctx.workspace.team) : undefined;
    if (!user) return fail('user_not_found');
    return {
      ok: true,
      user: {
        id: user.id,
        team_id: user.team_id,
        name: user.name,
        deleted: user.deleted ?? false,
        real_name: user.real_name,
        tz: user.tz,
        is_bot: user.is_bot,
        is_app_user: false,
        is_admin: false,
        profile: { real_name: user.real_name, display_name: user.name, team: user.team_id },
      },
    };
  },

  // views.open: a modal for the person whose interaction gave the trigger_id.
  'views.open': (args, ctx) => {
    const trigger = str(args.trigger_id);
    if (!trigger) return fail('invalid_arguments');
    const view = (typeof args.view === 'string' ? JSON.parse(args.view) : args.view) as
      Record<string, unknown> | undefined;
    if (!view || view.type !== 'modal' || !view.title) return fail('invalid_arguments');
    const blocks = blocksOf(view.blocks);
    if (blocks.length > 100) return fail('invalid_arguments');
    const opened = { id: `V0${ctx.world.views.length + 1}`.padEnd(11, '0'), trigger_id: trigger, ...view };
    ctx.world.views.push(opened);
    return { ok: true, view: { ...opened, team_id: ctx.workspace.team, state: { values: {} } } };
  },

  // conversations.open (needs im:write): the app's DM with one user, the same channel every time.
  'conversations.open': (args, ctx) => {
    const users = (str(args.users) ?? '').split(',').filter(Boolean);
    if (users.length !== 1) return fail(users.length ? 'not_implemented' : 'users_list_not_supplied');
    const user = ctx.world.user(users[0]!, ctx.workspace.team);
    if (!user) return fail('user_not_found');
    const existing = [...ctx.world.channels.values()].find((c) => c.is_im && c.user === user.id);
    const channel = existing ?? {
      id: `D0${user.id.slice(1, 9).padEnd(8, '0')}`,
      name: user.id,
      is_im: true,
      is_private: true,
      is_archived: false,
      user: user.id,
    };
    ctx.world.channels.set(channel.id, channel);
    return { ok: true, ...(existing ? { already_open: true } : {}), channel: { id: channel.id } };
  },

  // chat.getPermalink: a link to one message (no scope needed).
  'chat.getPermalink': (args, ctx) => {
    const channel = str(args.channel);
    const ts = str(args.message_ts);
    const message = channel && ts ? ctx.world.find(channel, ts) : undefined;
    if (!channel || !ts || !message) return fail('message_not_found');
    // A thread reply's permalink opens its thread: it carries thread_ts and cid, as Slack's does.
    const reply = message.thread_ts && message.thread_ts !== ts;
    return {
      ok: true,
      channel,
      permalink: `https://fake-slack.invalid/archives/${channel}/p${ts.replace('.', '')}${reply ? `?thread_ts=${message.thread_ts}&cid=${channel}` : ''}`,
    };
  },

  // agents.sessions.setStatus (docs.slack.dev/reference/methods/agents.sessions.setStatus): creates the
  // thread's session if needed, else updates its status; title and initiator count only on creation.
  // Only apps declared as agents may; thread_ts is required for thread-based sessions.
  'agents.sessions.setStatus': (args, ctx) => {
    if (!ctx.agent) return fail('not_authorized');
    const status = str(args.status);
    if (!status || !['active', 'processing', 'suspended', 'closed'].includes(status)) return fail('invalid_arguments');
    const channel = str(args.channel_id);
    if (!channel || !ctx.world.channel(channel)) return fail('channel_not_found');
    const thread = str(args.thread_ts);
    if (!thread || !ctx.world.find(channel, thread)) return fail('thread_not_found');
    const title = str(args.title);
    if (title && title.length > 200) return fail('invalid_arguments');
    const session = ctx.world.setSession(channel, thread, status, title, str(args.initiator_user_id));
    return {
      ok: true,
      status: session.status,
      ...(session.title ? { title: session.title } : {}),
      // Slack warns while the app does not subscribe to agent_session_stopped (no native Stop then).
      ...(ctx.world.subscribedToSessionStopped ? {} : { warning: 'missing_agent_session_stopped_event_subscription' }),
    };
  },

  // assistant.threads.setSuggestedPrompts (assistant:write): up to four {title, message} prompts for a thread.
  'assistant.threads.setSuggestedPrompts': (args, ctx) => {
    if (!ctx.agent) return fail('not_authorized');
    const channel = str(args.channel_id);
    const thread = str(args.thread_ts);
    if (!channel || !thread) return fail('invalid_arguments');
    const prompts = Array.isArray(args.prompts)
      ? args.prompts
      : typeof args.prompts === 'string'
        ? (JSON.parse(args.prompts) as unknown[])
        : [];
    const valid = prompts.every(
      (p) =>
        typeof p === 'object' &&
        p !== null &&
        typeof (p as { title?: unknown }).title === 'string' &&
        typeof (p as { message?: unknown }).message === 'string',
    );
    if (prompts.length === 0 || prompts.length > 4 || !valid) return fail('invalid_arguments');
    ctx.world.suggestedPrompts.set(`${channel}:${thread}`, {
      ...(str(args.title) ? { title: str(args.title)! } : {}),
      prompts: prompts as Array<{ title: string; message: string }>,
    });
    return { ok: true };
  },

  'agents.sessions.rename': (args, ctx) => {
    if (!ctx.agent) return fail('not_authorized');
    const channel = str(args.channel_id);
    const thread = str(args.thread_ts);
    const title = str(args.title);
    const session = channel && thread ? ctx.world.sessions.get(`${channel}:${thread}`) : undefined;
    if (!session) return fail('session_not_found');
    if (!title || title.length > 200) return fail('invalid_arguments');
    session.title = title;
    return { ok: true, title };
  },

  // usergroups.list (needs usergroups:read): the workspace's groups; `users` only with include_users.
  'usergroups.list': (args, ctx) => {
    const withUsers = args.include_users === true || args.include_users === 'true';
    const groups = [...ctx.world.userGroups.values()].filter((g) => g.team === ctx.workspace.team);
    return {
      ok: true,
      usergroups: groups.map((g) => ({
        id: g.id,
        team_id: g.team,
        is_usergroup: true,
        name: g.handle,
        handle: g.handle,
        description: '',
        date_delete: 0,
        user_count: g.users.length,
        ...(withUsers ? { users: g.users } : {}),
      })),
    };
  },

  'reactions.add': (args, ctx) => {
    const channel = requireChannel(args, ctx);
    if (typeof channel !== 'string') return channel;
    const name = str(args.name);
    if (!name) return fail('invalid_name');
    const ts = str(args.timestamp);
    const message = ts ? ctx.world.find(channel, ts) : undefined;
    if (!message) return fail('message_not_found');
    const users = (message.reactions[name] ??= []);
    if (users.includes(ctx.botUserId)) return fail('already_reacted');
    users.push(ctx.botUserId);
    return { ok: true };
  },

  'chat.startStream': streamingOnly((args, ctx) => {
    const channel = requireChannel(args, ctx);
    if (typeof channel !== 'string') return channel;
    const threadTs = str(args.thread_ts);
    // Streamed messages are always replies to a user's request.
    if (!threadTs)
      return fail('invalid_arguments', {
        response_metadata: { messages: ['[ERROR] missing required field: thread_ts'] },
      });
    // Outside DMs Slack must know who is being answered.
    if (!ctx.world.channel(channel)?.is_im && (!str(args.recipient_user_id) || !str(args.recipient_team_id))) {
      return fail('invalid_arguments', {
        response_metadata: { messages: ['[ERROR] recipient_user_id and recipient_team_id are required outside DMs'] },
      });
    }
    const problem = streamArgsProblem(args, false);
    if (problem) return problem;
    const message = ctx.world.add(
      {
        team: ctx.workspace.team,
        channel,
        thread_ts: threadTs,
        user: ctx.botUserId,
        bot_id: ctx.botId,
        text: streamText(args),
        chunks: otherChunks(args),
        blocks: [],
        streaming: 'in_progress',
      },
      'chat.startStream',
    );
    return { ok: true, channel, ts: message.ts };
  }),

  'chat.appendStream': streamingOnly((args, ctx) => {
    const message = ownMessage(args, ctx);
    if ('ok' in message) return message;
    if (message.streaming !== 'in_progress') return fail('message_not_in_streaming_state');
    const problem = streamArgsProblem(args, true);
    if (problem) return problem;
    message.chunks = [...(message.chunks ?? []), ...otherChunks(args)];
    ctx.world.edit(message, { text: message.text + streamText(args), blocks: message.blocks }, 'chat.appendStream');
    return { ok: true, channel: message.channel, ts: message.ts };
  }),

  'chat.stopStream': streamingOnly((args, ctx) => {
    const message = ownMessage(args, ctx);
    if ('ok' in message) return message;
    if (message.streaming !== 'in_progress') return fail('message_not_in_streaming_state');
    const problem = streamArgsProblem(args, false);
    if (problem) return problem;
    const blocks = [...message.blocks, ...blocksOf(args.blocks)];
    message.chunks = [...(message.chunks ?? []), ...otherChunks(args)];
    const tail = streamText(args);
    if (tail || blocks.length !== message.blocks.length) {
      ctx.world.edit(message, { text: message.text + tail, blocks }, 'chat.stopStream');
    }
    message.streaming = 'completed';
    return { ok: true, channel: message.channel, ts: message.ts, message: messageJson(message, ctx) };
  }),
};

/**
 * The `oldest`/`latest` range of conversations.history and .replies: exclusive of both ends unless
 * `inclusive` ("Include messages with oldest or latest timestamps in results").
 */
function inRange(args: Record<string, unknown>): (m: StoredMessage) => boolean {
  const oldest = str(args.oldest);
  const latest = str(args.latest);
  const inclusive = args.inclusive === true || args.inclusive === 'true' || args.inclusive === '1';
  const after = (ts: string, bound: string) => ts > bound || (inclusive && ts === bound);
  return (m) => (oldest === undefined || after(m.ts, oldest)) && (latest === undefined || after(latest, m.ts));
}

function page(items: Array<Record<string, unknown>>, args: Record<string, unknown>): Answer {
  const limit = Math.min(Math.max(Number(args.limit) || 100, 1), 1000);
  const start = Number(str(args.cursor)?.replace(/^offset:/, '') ?? 0) || 0;
  const slice = items.slice(start, start + limit);
  const more = start + limit < items.length;
  return {
    ok: true,
    messages: slice,
    has_more: more,
    response_metadata: { next_cursor: more ? `offset:${start + limit}` : '' },
  };
}
