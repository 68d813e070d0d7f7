import { ChannelType, MessageFlags, type Message } from 'discord.js';
import type { FileRef } from '../../core/work-item.ts';
import { fileRefsOf } from './files.ts';
import type { AdapterContext, AdmissionDraft } from '../platform.ts';
import type { ReplyTarget } from '../../core/reply-target.ts';
import { isDatabaseUnavailable } from '../../db/errors.ts';
import { Priority } from '../../core/work-item.ts';
import type { Requester } from '../../core/person.ts';
import type { DiscordOutbound } from './outbound.ts';
import { LIMITS } from './limits.ts';
import { requesterOf } from './people.ts';
import { TEXTS } from '../../core/texts.ts';
import { DISCORD_RULES } from './rules.ts';
import { discordConversationId } from './conversation-ids.ts';

/** Shown once per thread when a follow-up arrives blank because the Message Content intent is off. */
export const MENTION_NEEDED =
  'I can only read messages that mention me here (the Message Content intent is not enabled for this bot). Mention me to continue.';

const NO_THREAD =
  'I could not start a thread on your message. Give me the Create Public Threads and Send Messages in Threads permissions in this channel, or DM me.';

export interface MessageDeps {
  outbound: DiscordOutbound;
  /** False when Discord refused the privileged Message Content intent and we connected without it. */
  readsContent: () => boolean;
  /**
   * Waits before each further enqueue attempt while the database is unreachable. Discord never
   * redelivers a MESSAGE_CREATE, so a short outage (a Postgres restart or failover) is ridden out
   * here before the person is told to try again. Default: 0.5 s, 1 s, 2 s, 4 s.
   */
  enqueueRetryDelaysMs?: readonly number[];
}

const ENQUEUE_RETRY_DELAYS_MS = [500, 1000, 2000, 4000] as const;

class ThreadIdMismatch extends Error {}

/**
 * One incoming message. Answered: mentions in guild channels (in a thread started on the message,
 * or in the thread they were written in), DMs, and anything in a thread the bot started. Never
 * answered: bots (itself included), webhooks and system messages such as "thread created".
 */
export function createMessageHandler(ctx: AdapterContext, deps: MessageDeps) {
  const hinted = new Set<string>();

  return async function onMessage(message: Message): Promise<void> {
    const addressed = addressingOf(message);
    if (!addressed) return;
    const prompt = promptOf(message);
    const files = fileRefsOf(message);
    if (!prompt && files.length === 0) {
      const channelId = message.channel.id;
      // Without the intent Discord blanks follow-ups that do not mention us; say so once, not per message.
      if (addressed.inBotThread && !addressed.mentioned && !deps.readsContent() && !hinted.has(channelId)) {
        hinted.add(channelId);
        await deps.outbound.post({ platform: DISCORD_RULES.name, channel: channelId }, MENTION_NEEDED);
      }
      return;
    }
    const route = routeOf(message, addressed);
    const requester = requesterOf(message.author, { guildId: message.guildId, roles: message.member?.roles });
    await enqueueMessage(ctx, deps, { message, prompt, files, requester, isDm: addressed.isDm, ...route });
  };
}

/** How a message reaches the bot: where it was written, and whether it names the bot. */
interface Addressing {
  isDm: boolean;
  inThread: boolean;
  mentioned: boolean;
  inBotThread: boolean;
  /** The channel the thread it was written in belongs to, when it was written in one. */
  threadParent: string | undefined;
  /** Written in a private thread (type 12): only its members see it, not everyone in the parent. */
  privateThread: boolean;
}

/** How the message reaches the bot, or undefined when the bot does not answer it. */
function addressingOf(message: Message): Addressing | undefined {
  if (message.author.bot || message.webhookId || message.system) return undefined;
  const botId = message.client.user.id;
  const isDm = !message.inGuild();
  const channel = message.channel;
  const inThread = channel.isThread();
  const mentioned = message.mentions.users.has(botId);
  const inBotThread = inThread && channel.ownerId === botId;
  if (!isDm && !mentioned && !inBotThread) return undefined;
  const threadParent = inThread ? (channel.parentId ?? undefined) : undefined;
  const privateThread = channel.type === ChannelType.PrivateThread;
  return { isDm, inThread, mentioned, inBotThread, threadParent, privateThread };
}

/** The message's text without the bot's mention, on one line. */
function promptOf(message: Message): string {
  return message.content
    .replace(new RegExp(`<@!?${message.client.user.id}>`, 'g'), ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Where the answer goes, and whether a thread must be started for it. */
interface Route {
  needsThread: boolean;
  /** The channel (or thread) the answer is posted in. */
  channelId: string;
  target: ReplyTarget;
}

function routeOf(message: Message, addressed: Addressing): Route {
  // A mention in a channel continues in a thread started on the message. Discord gives a thread
  // started from a message the message's id, so the reply target is known before the thread exists.
  const needsThread = !addressed.isDm && !addressed.inThread;
  const channelId = needsThread ? message.id : message.channelId;
  // The channel the thread belongs to: a policy naming #ops covers the bot's threads in #ops.
  const parent = needsThread ? message.channelId : addressed.threadParent;
  const target: ReplyTarget = {
    platform: DISCORD_RULES.name,
    channel: channelId,
    ...(message.guildId ? { workspace: message.guildId } : {}),
    ...(parent ? { parent } : {}),
    ...(addressed.privateThread ? { privateThread: true } : {}),
  };
  return { needsThread, channelId, target };
}

/** A message, ready to become a work item. */
interface MessageTurn extends Route {
  message: Message;
  prompt: string;
  /** Its attachments, downloaded by the worker (src/files). */
  files: FileRef[];
  requester: Requester;
  isDm: boolean;
}

/**
 * Starts the thread a channel mention continues in, and remembers why it could not: the enqueue
 * that fails because of it tells the person about the thread, not about the database.
 */
function threadStarter(message: Message, prompt: string, expectedId: string) {
  const outcome: { error?: unknown } = {};
  // Set once the thread exists: a retry after a commit that failed must not start it again.
  let threadStarted = false;
  const start = async () => {
    if (threadStarted) return;
    try {
      const thread = await message.startThread({ name: threadName(prompt) });
      if (thread.id !== expectedId) throw new ThreadIdMismatch(`thread ${thread.id} for message ${message.id}`);
      threadStarted = true;
    } catch (error) {
      outcome.error = error;
      throw error;
    }
  };
  return { start, failure: () => outcome.error };
}

/** Enqueues the message's work item, riding out a short database outage (Discord never redelivers). */
async function enqueueMessage(ctx: AdapterContext, deps: MessageDeps, turn: MessageTurn): Promise<void> {
  const { message } = turn;
  const ids = {
    messageId: message.id,
    channel: message.channelId,
    guild: message.guildId ?? undefined,
    author: message.author.id,
  };
  const thread = threadStarter(message, turn.prompt, turn.channelId);
  const delays = deps.enqueueRetryDelaysMs ?? ENQUEUE_RETRY_DELAYS_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      // The message id is the dedupe key, marked in the same transaction as the enqueue: two
      // gateway sessions (two ingress replicas) receiving the same message make one turn. The
      // thread is created inside that transaction, so only the replica that takes the message
      // creates it, and a thread that cannot be created leaves nothing enqueued.
      const admitted = await ctx.admit({
        requester: turn.requester,
        place: turn.target,
        eventId: message.id,
        draft: messageDraft(turn),
        ...(turn.needsThread ? { beforeCommit: thread.start } : {}),
      });
      // Someone the policy does not serve gets the refusal as a reply, and no turn.
      if (!admitted.ok) await tellRefused(ctx, deps, message, admitted.refusal);
      else if (!admitted.item) ctx.log.debug(ids, 'Discord message already taken by another gateway session');
      return;
    } catch (error) {
      const threadError = thread.failure();
      if (threadError !== undefined) {
        ctx.log.warn({ err: threadError, ...ids }, 'could not start a Discord thread');
        await deps.outbound.post({ platform: DISCORD_RULES.name, channel: message.channelId }, NO_THREAD);
        return;
      }
      const delay = delays[attempt];
      if (delay !== undefined && isDatabaseUnavailable(error)) {
        ctx.log.warn({ err: error, ...ids, attempt: attempt + 1 }, 'database unreachable; retrying the enqueue');
        await new Promise((resolve) => setTimeout(resolve, delay));
        continue;
      }
      // Discord will not deliver it again: the person is told, and the log has what was lost.
      ctx.log.error(
        { err: error, ...ids, attempts: attempt + 1 },
        'could not enqueue a Discord message; it was not taken and the person was told to try again',
      );
      await tellUnavailable(message, ids, ctx);
      return;
    }
  }
}

/** The work item of a message. */
function messageDraft(turn: MessageTurn): AdmissionDraft {
  return {
    type: 'CHAT',
    priority: Priority.CRITICAL,
    conversationId: discordConversationId(turn.channelId, turn.isDm),
    input: { prompt: turn.prompt, ...(turn.files.length ? { files: turn.files } : {}) },
    payload: { messageId: turn.message.id },
    reply: turn.target,
    placeholder: '…',
  };
}

async function tellRefused(ctx: AdapterContext, deps: MessageDeps, message: Message, refusal: string): Promise<void> {
  await deps.outbound
    .post({ platform: DISCORD_RULES.name, channel: message.channelId }, refusal)
    .catch((error: unknown) => ctx.log.warn({ err: error }, 'could not tell a person they were refused'));
}

/**
 * Replies to the message through discord.js directly: the outbound client takes its rate tokens from
 * the database, which is what is unreachable.
 */
async function tellUnavailable(message: Message, ids: Record<string, unknown>, ctx: AdapterContext): Promise<void> {
  try {
    await message.reply({
      content: TEXTS.unavailable,
      flags: MessageFlags.SuppressEmbeds,
      allowedMentions: { parse: [], repliedUser: false },
    });
  } catch (error) {
    ctx.log.error({ err: error, ...ids }, 'could not tell the person their Discord message was not taken');
  }
}

/** A thread name Discord accepts: the start of the request, on one line. */
function threadName(prompt: string): string {
  const line = prompt.replace(/\s+/g, ' ').trim();
  if (line.length <= LIMITS.threadName) return line || 'Countersign';
  return `${line.slice(0, LIMITS.threadName - 1)}…`;
}
