/**
 * The fake's REST routes (API v10, under /api/v10). Each route is one entry in `ROUTES`, named by
 * its Discord template so tests and rate-limit counters use the same keys as the API reference.
 */
import type { Json } from '../../fixtures/discord/objects.ts';
import { snowflake } from '../../fixtures/discord/snowflake.ts';
import {
  alreadyAcknowledged,
  cannotEditOthers,
  invalidFormBody,
  maxLength,
  badLength,
  entityTooLarge,
  missingAccess,
  required,
  threadAlreadyExists,
  unknownApplication,
  unknownChannel,
  unknownGuild,
  unknownInteraction,
  unknownMember,
  unknownMessage,
  unknownUser,
  unknownWebhook,
  unsupported,
  type FieldProblem,
} from './api-errors.ts';
import { checkMessageBody, SETTABLE_FLAGS } from './message-rules.ts';
import { MessageFlag, type FakeWorld, type InteractionState, type StoredMessage, type UploadedFile } from './world.ts';

export interface RestContext {
  world: FakeWorld;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
  /** The `files[n]` parts of a multipart request (empty for a JSON one). */
  files: UploadedFile[];
  /** Sends a gateway event if a client is connected (REST-only tests have none). */
  notify(t: string, d: Json): void;
  gatewayUrl: string;
  /** When set, interaction callbacks later than this are answered 404 Unknown interaction, as Discord does after 3 s. */
  interactionAckDeadlineMs: number | undefined;
}

interface RestReply {
  status: number;
  body?: unknown;
}

interface Route {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  template: string;
  /** Interaction callbacks and interaction webhooks are authenticated by their token, not the bot token. */
  auth: boolean;
  handle(ctx: RestContext): RestReply;
}

const ok = (body: unknown, status = 200): RestReply => ({ status, body });
const noContent = (): RestReply => ({ status: 204 });

function channelOr404(ctx: RestContext): Json {
  const channel = ctx.world.channel(ctx.params.channel_id!);
  if (!channel) throw unknownChannel();
  return channel;
}

function messageOr404(ctx: RestContext, channelId: string, messageId: string): StoredMessage {
  const stored = ctx.world.messages.get(messageId);
  if (!stored || stored.deleted || stored.message.channel_id !== channelId) throw unknownMessage();
  return stored;
}

function applicationOr404(ctx: RestContext): void {
  if (ctx.params.application_id !== ctx.world.application.id) throw unknownApplication();
}

function postMessage(
  ctx: RestContext,
  channelId: string,
  raw: unknown,
  source: StoredMessage['source'],
  extra: Json = {},
): StoredMessage {
  const settableFlags = source === 'rest' ? SETTABLE_FLAGS.create : SETTABLE_FLAGS.interaction;
  const body = checkMessageBody(raw, { requireSomething: true, settableFlags });
  if (body.message_reference) {
    const ref = ctx.world.messages.get(body.message_reference.message_id);
    if (!ref && body.message_reference.fail_if_not_exists !== false) {
      throw invalidFormBody([
        { path: ['message_reference'], code: 'MESSAGE_REFERENCE_UNKNOWN_MESSAGE', message: 'Unknown message' },
      ]);
    }
  }
  const stored = ctx.world.createBotMessage(channelId, body, source, extra);
  if (!stored.ephemeral) ctx.notify('MESSAGE_CREATE', ctx.world.asGatewayMessage(stored.message));
  return stored;
}

function editMessage(ctx: RestContext, stored: StoredMessage, raw: unknown, clearFlags = 0): Json {
  const body = checkMessageBody(raw, { requireSomething: false, settableFlags: SETTABLE_FLAGS.edit });
  ctx.world.editMessage(stored, body, clearFlags);
  if (!stored.ephemeral) ctx.notify('MESSAGE_UPDATE', ctx.world.asGatewayMessage(stored.message));
  return stored.message;
}

function deleteMessage(ctx: RestContext, stored: StoredMessage): RestReply {
  stored.deleted = true;
  const channel = ctx.world.channel(stored.message.channel_id as string);
  ctx.notify('MESSAGE_DELETE', {
    id: stored.message.id,
    channel_id: stored.message.channel_id,
    ...(channel?.guild_id ? { guild_id: channel.guild_id } : {}),
  });
  return noContent();
}

// --- attachments ----------------------------------------------------------------------------

/** Bytes one attachment may have: the default upload limit (10 MiB) of a server without boosts. */
const ATTACHMENT_MAX_BYTES = 10 * 1024 * 1024;
/**
 * Names the fake refuses: empty, or holding a path separator or a control character. Stricter than
 * Discord documents (it rewrites odd names rather than refusing them), so an adapter that sends
 * such a name is caught here instead of trusted to a rewrite.
 */
// Matching control characters is the point here.
// eslint-disable-next-line no-control-regex
const UNSAFE_FILENAME = /^$|[/\\\u0000-\u001f\u007f]/;

interface PayloadAttachment {
  id: number;
  filename?: string;
  description?: string;
}

/** The `attachments` of a multipart body's payload_json: each names a `files[n]` part by `id` n. */
function payloadAttachments(body: unknown): PayloadAttachment[] {
  const list = (body as Json | undefined)?.attachments;
  if (!Array.isArray(list)) return [];
  return list.map((a, i) => {
    const entry = (a ?? {}) as Json;
    const id = Number(entry.id);
    if (!Number.isInteger(id) || id < 0) throw invalidFormBody([required(['attachments', i, 'id'])]);
    return {
      id,
      ...(typeof entry.filename === 'string' ? { filename: entry.filename } : {}),
      ...(typeof entry.description === 'string' ? { description: entry.description } : {}),
    };
  });
}

/**
 * A message's uploaded files (API v10 "Uploading Files"): each `files[n]` part at most 10 MiB (else
 * 413, 40005), a safe name, and every `attachments[]` entry of payload_json naming a part that came.
 * Returns the attachment objects the message will carry.
 */
function attachmentsOf(ctx: RestContext, channelId: string): Array<{ json: Json; file: UploadedFile }> {
  if (!ctx.files.length) return [];
  if (ctx.files.some((f) => f.bytes.length > ATTACHMENT_MAX_BYTES)) throw entityTooLarge();
  const declared = payloadAttachments(ctx.body);
  const problems: FieldProblem[] = [];
  declared.forEach((a, i) => {
    if (!ctx.files.some((f) => f.index === a.id))
      problems.push({ path: ['attachments', i, 'id'], code: 'ATTACHMENT_NOT_FOUND', message: 'Unknown attachment' });
  });
  const named = ctx.files.map((file) => {
    const entry = declared.find((a) => a.id === file.index);
    return { file, filename: entry?.filename ?? file.filename, description: entry?.description };
  });
  named.forEach(({ file, filename }) => {
    if (UNSAFE_FILENAME.test(filename))
      problems.push({ path: [`files[${file.index}]`], code: 'FILENAME_INVALID', message: 'Invalid file name' });
  });
  if (problems.length) throw invalidFormBody(problems);
  return named.map(({ file, filename, description }) => {
    const id = snowflake();
    const url = `https://cdn.discordapp.invalid/attachments/${channelId}/${id}/${encodeURIComponent(filename)}`;
    return {
      file,
      json: {
        id,
        filename,
        ...(description ? { description } : {}),
        size: file.bytes.length,
        url,
        proxy_url: url.replace('cdn.', 'media.'),
        content_type: file.contentType,
      },
    };
  });
}

/** How long Discord remembers a nonce for `enforce_nonce` ("the past few minutes"; the fake's choice). */
const NONCE_MEMORY_MS = 5 * 60_000;

/**
 * Create Message with `enforce_nonce` and a nonce: "it will be checked for uniqueness in the past few
 * minutes. If another message was created by the same author with the same nonce, that message will
 * be returned and no new message will be created."
 */
function sameNonceMessage(ctx: RestContext, channelId: string, body: Json): StoredMessage | undefined {
  if (body.enforce_nonce !== true || body.nonce === undefined) return undefined;
  const since = Date.now() - NONCE_MEMORY_MS;
  return ctx.world
    .messagesIn(channelId)
    .find((m) => m.source === 'rest' && !m.deleted && m.message.nonce === body.nonce && m.history[0]!.at >= since);
}

/** POST /channels/{id}/messages, JSON or multipart with attachments; the bot must see the channel. */
function createChannelMessage(ctx: RestContext): RestReply {
  const channelId = channelOr404(ctx).id as string;
  if (ctx.world.botLacksAccess.has(channelId)) throw missingAccess();
  const earlier = sameNonceMessage(ctx, channelId, (ctx.body ?? {}) as Json);
  if (earlier) return ok(earlier.message);
  const attachments = attachmentsOf(ctx, channelId);
  const body = (ctx.body ?? {}) as Json;
  // Files alone make a message: they count as its content.
  const raw = attachments.length && !Array.isArray(body.attachments) ? { ...body, attachments: [{}] } : body;
  const stored = postMessage(
    ctx,
    channelId,
    raw,
    'rest',
    attachments.length ? { attachments: attachments.map((a) => a.json) } : {},
  );
  for (const a of attachments) {
    ctx.world.uploads.push({
      messageId: stored.message.id as string,
      channelId,
      filename: a.json.filename as string,
      contentType: a.file.contentType,
      bytes: a.file.bytes,
    });
  }
  return ok(stored.message);
}

// --- interactions ---------------------------------------------------------------------------

const Callback = {
  Pong: 1,
  ChannelMessageWithSource: 4,
  DeferredChannelMessageWithSource: 5,
  DeferredUpdateMessage: 6,
  UpdateMessage: 7,
  ApplicationCommandAutocompleteResult: 8,
  Modal: 9,
} as const;
const COMPONENT_INTERACTION = 3;
const AUTOCOMPLETE_INTERACTION = 4;
const MODAL_SUBMIT_INTERACTION = 5;

function interactionResponseExtra(ctx: RestContext, interaction: InteractionState): Json {
  const p = interaction.payload;
  const data = (p.data ?? {}) as Json;
  const requester = (p.member as Json | undefined)?.user ?? p.user;
  return {
    webhook_id: ctx.world.application.id,
    application_id: ctx.world.application.id,
    ...(interaction.type === 2 ? { type: 20 } : {}),
    interaction_metadata: {
      id: interaction.id,
      type: interaction.type,
      user: requester,
      authorizing_integration_owners: p.authorizing_integration_owners ?? {},
      ...(typeof data.name === 'string' ? { name: data.name } : {}),
    },
  };
}

function interactionByToken(ctx: RestContext): InteractionState {
  if (ctx.params.application_id !== ctx.world.application.id) throw unknownWebhook();
  const interaction = [...ctx.world.interactions.values()].find((i) => i.token === ctx.params.token);
  // Follow-ups and @original only exist once the interaction was acknowledged.
  if (!interaction?.response) throw unknownWebhook();
  return interaction;
}

function webhookMessage(ctx: RestContext, interaction: InteractionState): StoredMessage {
  const id = ctx.params.message_id === '@original' ? interaction.originalMessageId : ctx.params.message_id;
  const known = id === interaction.originalMessageId || (id !== undefined && interaction.followupIds.includes(id));
  const stored = id ? ctx.world.messages.get(id) : undefined;
  if (!known || !stored || stored.deleted) throw unknownMessage();
  return stored;
}

function interactionCallback(ctx: RestContext): RestReply {
  const interaction = ctx.world.interactions.get(ctx.params.interaction_id!);
  if (!interaction || interaction.token !== ctx.params.interaction_token) throw unknownInteraction();
  if (
    ctx.interactionAckDeadlineMs !== undefined &&
    Date.now() - interaction.receivedAt > ctx.interactionAckDeadlineMs
  ) {
    throw unknownInteraction();
  }
  if (interaction.response) throw alreadyAcknowledged();
  const raw = (ctx.body ?? {}) as Json;
  const type = raw.type;
  const data = (raw.data ?? undefined) as Json | undefined;
  const wrongKind = () =>
    invalidFormBody([
      {
        path: ['type'],
        code: 'INTERACTION_RESPONSE_TYPE_INVALID',
        message: 'Interaction response type is invalid for this interaction',
      },
    ]);
  const channelId = interaction.channelId;
  let message: StoredMessage | undefined;
  switch (type) {
    case Callback.ChannelMessageWithSource:
      message = postMessage(ctx, channelId, data, 'interaction', interactionResponseExtra(ctx, interaction));
      interaction.originalMessageId = message.message.id as string;
      break;
    case Callback.DeferredChannelMessageWithSource: {
      const flags = (((data?.flags as number | undefined) ?? 0) & MessageFlag.Ephemeral) | MessageFlag.Loading;
      // The "is thinking…" placeholder: an empty message with the LOADING flag, replaced by PATCH @original.
      const stored = ctx.world.createBotMessage(
        channelId,
        { flags },
        'interaction',
        interactionResponseExtra(ctx, interaction),
      );
      if (!stored.ephemeral) ctx.notify('MESSAGE_CREATE', ctx.world.asGatewayMessage(stored.message));
      message = stored;
      interaction.originalMessageId = stored.message.id as string;
      break;
    }
    case Callback.DeferredUpdateMessage:
    case Callback.UpdateMessage: {
      if (interaction.type !== COMPONENT_INTERACTION && interaction.type !== MODAL_SUBMIT_INTERACTION)
        throw wrongKind();
      const clickedId = (interaction.payload.message as Json | undefined)?.id as string | undefined;
      const clicked = clickedId ? ctx.world.messages.get(clickedId) : undefined;
      if (!clicked) throw unknownMessage();
      interaction.originalMessageId = clickedId;
      if (type === Callback.UpdateMessage) editMessage(ctx, clicked, data ?? {});
      message = clicked;
      break;
    }
    case Callback.ApplicationCommandAutocompleteResult: {
      if (interaction.type !== AUTOCOMPLETE_INTERACTION) throw wrongKind();
      const choices = data?.choices;
      if (!Array.isArray(choices)) throw invalidFormBody([required(['data', 'choices'])]);
      if (choices.length > 25) throw invalidFormBody([maxLength(['data', 'choices'], 25)]);
      break;
    }
    case Callback.Modal:
      if (interaction.type === AUTOCOMPLETE_INTERACTION || interaction.type === MODAL_SUBMIT_INTERACTION)
        throw wrongKind();
      break;
    case Callback.Pong:
      if (interaction.type !== 1) throw wrongKind();
      break;
    default:
      throw invalidFormBody([
        { path: ['type'], code: 'BASE_TYPE_CHOICES', message: `Value must be one of (1, 4, 5, 6, 7, 8, 9, 10, 12).` },
      ]);
  }
  interaction.response = { type, data, at: Date.now() };
  if (ctx.query.get('with_response') !== 'true') return noContent();
  return ok({
    interaction: {
      id: interaction.id,
      type: interaction.type,
      ...(message
        ? {
            response_message_id: message.message.id,
            response_message_loading: type === Callback.DeferredChannelMessageWithSource,
            response_message_ephemeral: message.ephemeral,
          }
        : {}),
    },
    resource: { type, ...(message && type !== Callback.DeferredUpdateMessage ? { message: message.message } : {}) },
  });
}

// --- commands -------------------------------------------------------------------------------

const COMMAND_NAME = /^[-_'\p{L}\p{N}\p{sc=Deva}\p{sc=Thai}]{1,32}$/u;

function putCommands(ctx: RestContext, scope: string): RestReply {
  applicationOr404(ctx);
  if (!Array.isArray(ctx.body))
    throw invalidFormBody([{ path: [], code: 'BASE_TYPE_ARRAY', message: 'Must be an array.' }]);
  const problems: FieldProblem[] = [];
  const body = ctx.body as Json[];
  if (body.length > 100) problems.push(badLength([], 0, 100));
  body.forEach((c, i) => {
    const name = c.name;
    if (typeof name !== 'string') problems.push(required([i, 'name']));
    else if (!COMMAND_NAME.test(name) || name !== name.toLowerCase()) {
      problems.push({
        path: [i, 'name'],
        code: 'APPLICATION_COMMAND_INVALID_NAME',
        message: 'Command name is invalid',
      });
    }
    const type = (c.type as number | undefined) ?? 1;
    if (type === 1) {
      const d = c.description;
      if (typeof d !== 'string' || d.length < 1 || d.length > 100) problems.push(badLength([i, 'description'], 1, 100));
    }
  });
  if (problems.length) throw invalidFormBody(problems);
  const previous = ctx.world.commands.get(scope) ?? [];
  const commands = body.map((c) => {
    const kept = previous.find((p) => p.name === c.name && (p.type ?? 1) === (c.type ?? 1));
    return {
      id: (kept?.id as string | undefined) ?? snowflake(),
      application_id: ctx.world.application.id,
      version: snowflake(),
      default_member_permissions: null,
      type: 1,
      description: '',
      nsfw: false,
      ...(scope === 'global' ? {} : { guild_id: scope }),
      ...c,
    };
  });
  ctx.world.commands.set(scope, commands);
  ctx.world.commandPuts.push({ scope, at: Date.now(), commands });
  return ok(commands);
}

// --- routes ---------------------------------------------------------------------------------

const ROUTES: Route[] = [
  {
    method: 'GET',
    template: '/gateway',
    auth: false,
    handle: (ctx) => ok({ url: ctx.gatewayUrl }),
  },
  {
    method: 'GET',
    template: '/gateway/bot',
    auth: true,
    handle: (ctx) =>
      ok({
        url: ctx.gatewayUrl,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
      }),
  },
  {
    method: 'GET',
    template: '/users/@me',
    auth: true,
    handle: (ctx) => ok({ ...ctx.world.bot, verified: true, mfa_enabled: false }),
  },
  {
    method: 'GET',
    template: '/users/:user_id',
    auth: true,
    handle: (ctx) => {
      const u = ctx.world.users.get(ctx.params.user_id!);
      if (!u) throw unknownUser();
      return ok(u);
    },
  },
  {
    // Get Current User Guilds: the servers the bot is in, as partial guilds.
    method: 'GET',
    template: '/users/@me/guilds',
    auth: true,
    handle: (ctx) =>
      ok([
        {
          id: ctx.world.guild.id,
          name: ctx.world.guild.name,
          icon: null,
          owner: false,
          permissions: '0',
          features: [],
        },
      ]),
  },
  {
    method: 'POST',
    template: '/users/@me/channels',
    auth: true,
    handle: (ctx) => {
      const recipientId = (ctx.body as Json | undefined)?.recipient_id as string | undefined;
      const recipient = recipientId ? ctx.world.users.get(recipientId) : undefined;
      if (!recipient) throw unknownUser();
      const existing = [...ctx.world.channels.values()].find(
        (c) => c.type === 1 && (c.recipients as Json[]).some((r) => r.id === recipient.id),
      );
      if (existing) return ok(existing);
      const dm = { id: snowflake(), type: 1, last_message_id: null, recipients: [recipient], flags: 0 };
      ctx.world.channels.set(dm.id, dm);
      return ok(dm);
    },
  },
  { method: 'GET', template: '/applications/@me', auth: true, handle: (ctx) => ok(ctx.world.application) },
  { method: 'GET', template: '/oauth2/applications/@me', auth: true, handle: (ctx) => ok(ctx.world.application) },
  { method: 'GET', template: '/channels/:channel_id', auth: true, handle: (ctx) => ok(channelOr404(ctx)) },
  {
    // Get Guild Member: 10007 Unknown Member for someone not in the guild.
    method: 'GET',
    template: '/guilds/:guild_id/members/:user_id',
    auth: true,
    handle: (ctx) => {
      if (ctx.params.guild_id !== ctx.world.guild.id) throw unknownGuild();
      const found = ctx.world.guildMember(ctx.params.user_id!);
      if (!found) throw unknownMember();
      return ok(found);
    },
  },
  {
    // Get Thread Member: 10007 Unknown Member for someone not in the thread.
    method: 'GET',
    template: '/channels/:channel_id/thread-members/:user_id',
    auth: true,
    handle: (ctx) => {
      const thread = channelOr404(ctx);
      if (thread.type !== 11 && thread.type !== 12) throw unknownChannel();
      const userId = ctx.params.user_id!;
      const joined = ctx.world.threadMembers.get(thread.id as string)?.get(userId);
      if (!joined) throw unknownMember();
      return ok({ id: thread.id, user_id: userId, join_timestamp: joined, flags: 0 });
    },
  },
  {
    method: 'GET',
    template: '/channels/:channel_id/messages',
    auth: true,
    handle: (ctx) => {
      const channel = channelOr404(ctx);
      const limitRaw = ctx.query.get('limit');
      const limit = limitRaw === null ? 50 : Number(limitRaw);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
        throw invalidFormBody([
          { path: ['limit'], code: 'NUMBER_TYPE_MAX', message: 'Int value should be less than or equal to 100.' },
        ]);
      }
      const all = ctx.world
        .messagesIn(channel.id as string)
        .filter((m) => !m.deleted && !m.ephemeral)
        .map((m) => m.message);
      const id = (m: Json) => BigInt(m.id as string);
      const before = ctx.query.get('before');
      const after = ctx.query.get('after');
      const around = ctx.query.get('around');
      let picked: Json[];
      if (after) picked = all.filter((m) => id(m) > BigInt(after)).slice(0, limit);
      else if (around) {
        const at = all.findIndex((m) => id(m) >= BigInt(around));
        const start = Math.max(0, (at < 0 ? all.length : at) - Math.floor(limit / 2));
        picked = all.slice(start, start + limit);
      } else picked = (before ? all.filter((m) => id(m) < BigInt(before)) : all).slice(-limit);
      // Newest first, like the API.
      return ok([...picked].reverse());
    },
  },
  {
    method: 'POST',
    template: '/channels/:channel_id/messages',
    auth: true,
    handle: createChannelMessage,
  },
  {
    method: 'GET',
    template: '/channels/:channel_id/messages/:message_id',
    auth: true,
    handle: (ctx) => ok(messageOr404(ctx, channelOr404(ctx).id as string, ctx.params.message_id!).message),
  },
  {
    method: 'PATCH',
    template: '/channels/:channel_id/messages/:message_id',
    auth: true,
    handle: (ctx) => {
      const stored = messageOr404(ctx, channelOr404(ctx).id as string, ctx.params.message_id!);
      if ((stored.message.author as Json).id !== ctx.world.bot.id) throw cannotEditOthers();
      return ok(editMessage(ctx, stored, ctx.body));
    },
  },
  {
    method: 'DELETE',
    template: '/channels/:channel_id/messages/:message_id',
    auth: true,
    handle: (ctx) => deleteMessage(ctx, messageOr404(ctx, channelOr404(ctx).id as string, ctx.params.message_id!)),
  },
  {
    method: 'POST',
    template: '/channels/:channel_id/messages/:message_id/threads',
    auth: true,
    handle: (ctx) => {
      const channel = channelOr404(ctx);
      const starter = messageOr404(ctx, channel.id as string, ctx.params.message_id!);
      if (channel.type !== 0 && channel.type !== 5)
        throw unsupported(`threads from messages in channels of type ${String(channel.type)}`);
      const body = (ctx.body ?? {}) as Json;
      const name = body.name;
      if (typeof name !== 'string' || name.length < 1 || name.length > 100)
        throw invalidFormBody([badLength(['name'], 1, 100)]);
      if (ctx.world.channels.has(starter.message.id as string)) throw threadAlreadyExists();
      // A thread started from a message takes the message's id.
      const thread = ctx.world.createThread({
        id: starter.message.id as string,
        parentId: channel.id as string,
        name,
        type: 11,
        ...(typeof body.auto_archive_duration === 'number' ? { autoArchiveMinutes: body.auto_archive_duration } : {}),
      });
      starter.message.thread = thread;
      starter.message.flags = ((starter.message.flags as number) ?? 0) | MessageFlag.HasThread;
      ctx.notify('THREAD_CREATE', { ...thread, newly_created: true });
      return ok(thread, 201);
    },
  },
  {
    method: 'POST',
    template: '/channels/:channel_id/threads',
    auth: true,
    handle: (ctx) => {
      const channel = channelOr404(ctx);
      if (channel.type !== 0) throw unsupported(`threads in channels of type ${String(channel.type)} (forum posts)`);
      const body = (ctx.body ?? {}) as Json;
      const name = body.name;
      if (typeof name !== 'string' || name.length < 1 || name.length > 100)
        throw invalidFormBody([badLength(['name'], 1, 100)]);
      // The API documents PRIVATE_THREAD (12) as the default type.
      const type = body.type === 11 ? 11 : 12;
      const thread = ctx.world.createThread({
        parentId: channel.id as string,
        name,
        type,
        ...(typeof body.auto_archive_duration === 'number' ? { autoArchiveMinutes: body.auto_archive_duration } : {}),
      });
      ctx.notify('THREAD_CREATE', { ...thread, newly_created: true });
      return ok(thread, 201);
    },
  },
  {
    method: 'POST',
    template: '/interactions/:interaction_id/:interaction_token/callback',
    auth: false,
    handle: interactionCallback,
  },
  {
    method: 'POST',
    template: '/webhooks/:application_id/:token',
    auth: false,
    handle: (ctx) => {
      const interaction = interactionByToken(ctx);
      const stored = postMessage(ctx, interaction.channelId, ctx.body, 'interaction', {
        ...interactionResponseExtra(ctx, interaction),
        type: 0,
      });
      interaction.followupIds.push(stored.message.id as string);
      return ctx.query.get('wait') === 'false' ? noContent() : ok(stored.message);
    },
  },
  ...(['GET', 'PATCH', 'DELETE'] as const).map((method): Route => ({
    method,
    template: '/webhooks/:application_id/:token/messages/:message_id',
    auth: false,
    handle: (ctx) => {
      const interaction = interactionByToken(ctx);
      const stored = webhookMessage(ctx, interaction);
      if (method === 'GET') return ok(stored.message);
      if (method === 'DELETE') return deleteMessage(ctx, stored);
      return ok(editMessage(ctx, stored, ctx.body, MessageFlag.Loading));
    },
  })),
  {
    method: 'GET',
    template: '/applications/:application_id/commands',
    auth: true,
    handle: (ctx) => {
      applicationOr404(ctx);
      return ok(ctx.world.commands.get('global') ?? []);
    },
  },
  {
    method: 'PUT',
    template: '/applications/:application_id/commands',
    auth: true,
    handle: (ctx) => putCommands(ctx, 'global'),
  },
  {
    method: 'GET',
    template: '/applications/:application_id/guilds/:guild_id/commands',
    auth: true,
    handle: (ctx) => {
      applicationOr404(ctx);
      return ok(ctx.world.commands.get(ctx.params.guild_id!) ?? []);
    },
  },
  {
    method: 'PUT',
    template: '/applications/:application_id/guilds/:guild_id/commands',
    auth: true,
    handle: (ctx) => putCommands(ctx, ctx.params.guild_id!),
  },
];

export interface MatchedRoute {
  route: Route;
  params: Record<string, string>;
  /** `METHOD /template`: the key rate limits and counters use. */
  key: string;
  /** The bucket's major parameter: channel, guild or webhook. */
  major: string;
}

/** Finds the route for a path relative to /api/v10; literal segments win over parameters. */
export function matchRoute(method: string, path: string): MatchedRoute | { pathExists: boolean } {
  const segments = path.split('/').filter(Boolean).map(decodeURIComponent);
  let pathExists = false;
  const candidates = ROUTES.map((route) => {
    const parts = route.template.split('/').filter(Boolean);
    if (parts.length !== segments.length) return undefined;
    const params: Record<string, string> = {};
    let literals = 0;
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      const seg = segments[i]!;
      if (part.startsWith(':')) params[part.slice(1)] = seg;
      else if (part === seg) literals++;
      else return undefined;
    }
    return { route, params, literals };
  }).filter((c) => c !== undefined);
  if (candidates.length) pathExists = true;
  const best = candidates.filter((c) => c.route.method === method).sort((a, b) => b.literals - a.literals)[0];
  if (!best) return { pathExists };
  const p = best.params;
  const major =
    p.channel_id ?? p.guild_id ?? (p.token ? `${p.application_id}/${p.token}` : (p.interaction_id ?? 'global'));
  return { route: best.route, params: p, key: `${method} ${best.route.template}`, major };
}
