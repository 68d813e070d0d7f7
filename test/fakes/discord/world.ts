/**
 * The fake's state: one bot in one guild with two text channels, a person, a DM between them,
 * and everything the bot does there — messages with their full edit history, threads, slash
 * commands, interactions. Objects are kept in Discord's API v10 JSON shapes.
 */
import {
  dmChannel,
  guildCreate,
  guildRole,
  member,
  textChannel,
  threadChannel,
  user,
  type ApiUser,
  type Json,
} from '../../fixtures/discord/objects.ts';
import type { DiscordScene } from '../../fixtures/discord/payloads.ts';
import { snowflake } from '../../fixtures/discord/snowflake.ts';
import type { AllowedMentions, MessageBody } from './message-rules.ts';

/** The VIEW_CHANNEL permission bit (1 << 10), as a permission string. */
const VIEW_CHANNEL = String(1 << 10);

export const MessageFlag = { HasThread: 1 << 5, Ephemeral: 1 << 6, Loading: 1 << 7 } as const;

interface MessageVersion {
  content: string;
  embeds: Json[];
  components: Json[];
  flags: number;
  at: number;
}

/** Who would get a notification from a message: what `allowed_mentions` let through. */
interface Pings {
  users: string[];
  roles: string[];
  everyone: boolean;
}

export interface StoredMessage {
  /** The message as the API returns it now. */
  message: Json;
  /** Every version: [0] as created, then one per edit. */
  history: MessageVersion[];
  /** `allowed_mentions` of the latest create or edit; undefined when the body had none. */
  allowedMentions: AllowedMentions | undefined;
  pings: Pings;
  deleted: boolean;
  ephemeral: boolean;
  /** How it was made: the bot over REST, an interaction response/follow-up, or a test's user message. */
  source: 'rest' | 'interaction' | 'user';
}

/** A file sent as `files[n]` of a multipart request, as the fake received it. */
export interface UploadedFile {
  /** `n` of the part's name `files[n]`. */
  index: number;
  /** The part's filename (Content-Disposition). */
  filename: string;
  contentType: string;
  bytes: Buffer;
}

/** An attachment the bot posted: the message it is on and every byte of it. */
export interface StoredUpload {
  messageId: string;
  channelId: string;
  /** The attachment's name as shown (the `attachments[]` entry's, else the part's). */
  filename: string;
  contentType: string;
  bytes: Buffer;
}

export interface InteractionState {
  payload: Json;
  id: string;
  token: string;
  type: number;
  channelId: string;
  /** The first callback, once the bot acknowledged. */
  response?: { type: number; data: Json | undefined; at: number };
  /** Message id `@original` points at: the response message, or the clicked message for components. */
  originalMessageId?: string;
  followupIds: string[];
  receivedAt: number;
}

export interface CommandPut {
  scope: 'global' | string;
  at: number;
  commands: Json[];
}

export class FakeWorld {
  readonly token: string;
  readonly bot: ApiUser;
  readonly human: ApiUser;
  readonly application: Json & { id: string; flags: number };
  readonly guild: { id: string; name: string };
  readonly channels = new Map<string, Json>();
  readonly users = new Map<string, ApiUser>();
  readonly messages = new Map<string, StoredMessage>();
  readonly interactions = new Map<string, InteractionState>();
  readonly commands = new Map<string, Json[]>();
  readonly commandPuts: CommandPut[] = [];
  readonly scene: DiscordScene;
  readonly opsChannelId: string;
  /** Guild roles besides @everyone, and who has them (user id → role ids). */
  readonly roles: Json[] = [];
  readonly memberRoles = new Map<string, string[]>();
  /**
   * Guild members beyond the bot and the human. Like a guild's members without the privileged
   * GuildMembers intent, they are not in GUILD_CREATE: clients fetch them (GET /guilds/:id/members/:id).
   */
  readonly otherMembers = new Map<string, ApiUser>();
  /** Who is in each thread (thread id → user id → join time), as Get Thread Member answers. */
  readonly threadMembers = new Map<string, Map<string, string>>();
  /**
   * Channels the bot cannot see (kicked from a private thread, a channel it lost VIEW_CHANNEL in):
   * posting there answers 403 Missing Access (50001), as Discord does.
   */
  readonly botLacksAccess = new Set<string>();
  /** Attachments the bot posted, oldest first, with their bytes. */
  readonly uploads: StoredUpload[] = [];

  constructor(token: string) {
    this.token = token;
    this.bot = user({ username: 'countersign', bot: true });
    this.human = user({ username: 'alice' });
    for (const u of [this.bot, this.human]) this.users.set(u.id, u);
    // Discord gives a bot the same id as its application.
    this.application = {
      id: this.bot.id,
      name: 'Countersign',
      icon: null,
      description: '',
      bot_public: false,
      bot_require_code_grant: false,
      verify_key: 'a'.repeat(64),
      flags: 1 << 19, // GATEWAY_MESSAGE_CONTENT_LIMITED (content intent enabled for an unverified app)
      team: null,
      owner: this.human,
      bot: this.bot,
    };
    this.guild = { id: snowflake(), name: 'Countersign Test Guild' };
    const general = textChannel({ guildId: this.guild.id, name: 'general', position: 0 });
    const ops = textChannel({ guildId: this.guild.id, name: 'ops', position: 1 });
    const dm = dmChannel({ recipient: this.human });
    for (const c of [general, ops, dm]) this.channels.set(c.id as string, c);
    this.opsChannelId = ops.id as string;
    this.scene = {
      bot: this.bot,
      applicationId: this.application.id,
      guildId: this.guild.id,
      channelId: general.id as string,
      human: this.human,
      dmChannelId: dm.id as string,
    };
  }

  /** Adds a guild role (before the bot connects: GUILD_CREATE carries it) and gives it to `members`. */
  addRole(name: string, members: string[]): string {
    const created = guildRole(this.guild.id, { name, position: this.roles.length + 1 });
    this.roles.push(created);
    for (const id of members) this.memberRoles.set(id, [...(this.memberRoles.get(id) ?? []), created.id as string]);
    return created.id as string;
  }

  /** Adds a person to the guild (fetched on demand, not in GUILD_CREATE). */
  addMember(person: ApiUser): void {
    this.users.set(person.id, person);
    this.otherMembers.set(person.id, person);
  }

  /** The guild member object of a user, or undefined for someone not in the guild. */
  guildMember(userId: string): Json | undefined {
    const person = this.otherMembers.get(userId) ?? [this.bot, this.human].find((u) => u.id === userId);
    return person ? member(person, undefined, this.memberRoles.get(userId) ?? []) : undefined;
  }

  /**
   * Lets only `viewers` (and the owner, who sees everything) view a channel: a permission overwrite
   * denying VIEW_CHANNEL to @everyone and one allowing it to each viewer. Before the bot connects,
   * so GUILD_CREATE carries it.
   */
  restrictChannel(channelId: string, viewers: string[]): void {
    const channel = this.channels.get(channelId);
    if (!channel) throw new Error(`no channel ${channelId}`);
    channel.permission_overwrites = [
      { id: this.guild.id, type: 0, allow: '0', deny: VIEW_CHANNEL },
      ...viewers.map((id) => ({ id, type: 1, allow: VIEW_CHANNEL, deny: '0' })),
    ];
  }

  /** Adds a person to a thread's members. */
  joinThread(threadId: string, userId: string): void {
    const members = this.threadMembers.get(threadId) ?? new Map<string, string>();
    members.set(userId, new Date().toISOString());
    this.threadMembers.set(threadId, members);
  }

  guildCreates(): Json[] {
    const inGuild = [...this.channels.values()].filter((c) => c.guild_id === this.guild.id);
    return [
      guildCreate({
        id: this.guild.id,
        name: this.guild.name,
        ownerId: this.human.id,
        members: [this.bot, this.human],
        channels: inGuild.filter((c) => c.type !== 11 && c.type !== 12),
        threads: inGuild.filter((c) => c.type === 11 || c.type === 12),
        roles: this.roles,
      }),
    ];
  }

  channel(id: string): Json | undefined {
    return this.channels.get(id);
  }

  /** Messages of a channel in the order they were created (deleted ones included, flagged). */
  messagesIn(channelId: string): StoredMessage[] {
    return [...this.messages.values()].filter((m) => m.message.channel_id === channelId);
  }

  /** Builds and stores a message the bot (or an interaction on its behalf) writes. */
  createBotMessage(
    channelId: string,
    body: MessageBody,
    source: StoredMessage['source'],
    extra: Json = {},
  ): StoredMessage {
    const content = body.content ?? '';
    const flags = body.flags ?? 0;
    const reference = body.message_reference;
    const referenced = reference ? this.messages.get(reference.message_id) : undefined;
    const pings = pingsOf(
      content,
      body.allowed_mentions ?? undefined,
      referenced?.message.author as ApiUser | undefined,
    );
    const message: Json = {
      id: snowflake(),
      type: reference ? 19 : 0,
      channel_id: channelId,
      author: this.bot,
      content,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: body.tts ?? false,
      mention_everyone: pings.everyone,
      mentions: pings.users.map((id) => this.users.get(id) ?? { id }),
      mention_roles: pings.roles,
      attachments: [],
      embeds: body.embeds ?? [],
      components: body.components ?? [],
      pinned: false,
      flags,
      ...(body.nonce !== undefined ? { nonce: body.nonce } : {}),
      ...(reference
        ? {
            message_reference: {
              type: 0,
              message_id: reference.message_id,
              channel_id: reference.channel_id ?? channelId,
            },
            referenced_message: referenced?.message ?? null,
          }
        : {}),
      ...extra,
    };
    const stored: StoredMessage = {
      message,
      history: [version(message)],
      allowedMentions: body.allowed_mentions ?? undefined,
      pings,
      deleted: false,
      ephemeral: (flags & MessageFlag.Ephemeral) !== 0,
      source,
    };
    this.messages.set(message.id as string, stored);
    const channel = this.channels.get(channelId);
    if (channel) channel.last_message_id = message.id;
    return stored;
  }

  /** Applies an edit (PATCH body) to a stored message, keeping the previous version in history. */
  editMessage(stored: StoredMessage, body: MessageBody, clearFlags = 0): void {
    const m = stored.message;
    if (body.content !== undefined) m.content = body.content ?? '';
    if (body.embeds !== undefined) m.embeds = body.embeds ?? [];
    if (body.components !== undefined) m.components = body.components ?? [];
    if (body.flags != null) m.flags = body.flags;
    m.flags = (m.flags as number) & ~clearFlags;
    m.edited_timestamp = new Date().toISOString();
    if (body.allowed_mentions !== undefined) stored.allowedMentions = body.allowed_mentions ?? undefined;
    stored.pings = pingsOf(m.content as string, stored.allowedMentions, undefined);
    m.mention_everyone = stored.pings.everyone;
    m.mentions = stored.pings.users.map((id) => this.users.get(id) ?? { id });
    m.mention_roles = stored.pings.roles;
    stored.history.push(version(m));
  }

  /** Stores a message a person sent (the payload a test dispatches as MESSAGE_CREATE). */
  storeUserMessage(payload: Json): StoredMessage {
    const { member: _member, guild_id: _guild, channel_type: _type, ...message } = payload;
    const stored: StoredMessage = {
      message,
      history: [version(message)],
      allowedMentions: undefined,
      pings: { users: [], roles: [], everyone: false },
      deleted: false,
      ephemeral: false,
      source: 'user',
    };
    this.messages.set(message.id as string, stored);
    const author = message.author as ApiUser | undefined;
    if (author && !this.users.has(author.id)) this.users.set(author.id, author);
    return stored;
  }

  createThread(fields: {
    parentId: string;
    name: string;
    type?: 11 | 12;
    id?: string;
    autoArchiveMinutes?: number;
  }): Json {
    const thread = threadChannel({
      ...fields,
      guildId: this.guild.id,
      ownerId: this.bot.id,
    });
    this.channels.set(thread.id as string, thread);
    return thread;
  }

  /** Adds guild context the gateway carries on guild messages (`guild_id`, partial `member`). */
  asGatewayMessage(message: Json): Json {
    const channel = this.channels.get(message.channel_id as string);
    if (!channel || channel.guild_id !== this.guild.id) return message;
    const { user: _user, ...partialMember } = member(message.author as ApiUser);
    return { ...message, guild_id: this.guild.id, member: partialMember };
  }
}

function version(m: Json): MessageVersion {
  return {
    content: (m.content as string) ?? '',
    embeds: structuredClone((m.embeds as Json[]) ?? []),
    components: structuredClone((m.components as Json[]) ?? []),
    flags: (m.flags as number) ?? 0,
    at: Date.now(),
  };
}

/**
 * Who a message notifies. Without `allowed_mentions` Discord parses everything; with it, only the
 * listed kinds — so `{ parse: [] }` notifies no one even when the text contains `<@id>`.
 */
function pingsOf(content: string, allowed: AllowedMentions | undefined, repliedTo: ApiUser | undefined): Pings {
  const parse = allowed ? (allowed.parse ?? []) : ['users', 'roles', 'everyone'];
  const userIds = [...content.matchAll(/<@!?(\d+)>/g)].map((m) => m[1]!);
  const roleIds = [...content.matchAll(/<@&(\d+)>/g)].map((m) => m[1]!);
  const users = allowed?.users
    ? userIds.filter((id) => allowed.users!.includes(id))
    : parse.includes('users')
      ? userIds
      : [];
  const roles = allowed?.roles
    ? roleIds.filter((id) => allowed.roles!.includes(id))
    : parse.includes('roles')
      ? roleIds
      : [];
  // A reply pings the replied-to author unless `replied_user: false` (the default when allowed_mentions is sent).
  if (repliedTo && (allowed ? allowed.replied_user === true : true)) users.push(repliedTo.id);
  return {
    users: [...new Set(users)],
    roles: [...new Set(roles)],
    everyone: parse.includes('everyone') && /@(everyone|here)\b/.test(content),
  };
}
