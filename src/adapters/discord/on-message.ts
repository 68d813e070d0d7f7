import { MessageFlags, type Message } from 'discord.js';
import type { AdapterContext } from '../platform.ts';
import type { ReplyTarget } from '../../core/reply-target.ts';
import { isDatabaseUnavailable } from '../../db/errors.ts';
import { enqueueInboundWorkItem } from '../../queue/turn-lifecycle.ts';
import { Priority } from '../../core/work-item.ts';
import type { DiscordOutbound } from './outbound.ts';
import { LIMITS } from './limits.ts';
import { requesterOf } from './people.ts';
import { TEXTS } from '../../core/texts.ts';

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
    if (message.author.bot || message.webhookId || message.system) return;
    const botId = message.client.user.id;
    const isDm = !message.inGuild();
    const channel = message.channel;
    const inThread = channel.isThread();
    const mentioned = message.mentions.users.has(botId);
    const inBotThread = inThread && channel.ownerId === botId;
    if (!isDm && !mentioned && !inBotThread) return;

    const prompt = message.content
      .replace(new RegExp(`<@!?${botId}>`, 'g'), ' ')
      .replace(/\s+/g, ' ')
      .trim();
    if (!prompt) {
      // Without the intent Discord blanks follow-ups that do not mention us; say so once, not per message.
      if (inBotThread && !mentioned && !deps.readsContent() && !hinted.has(channel.id)) {
        hinted.add(channel.id);
        await deps.outbound.post({ platform: 'discord', channel: channel.id }, MENTION_NEEDED);
      }
      return;
    }

    // A mention in a channel continues in a thread started on the message. Discord gives a thread
    // started from a message the message's id, so the reply target is known before the thread exists.
    const needsThread = !isDm && !inThread;
    const channelId = needsThread ? message.id : message.channelId;
    // The channel the thread belongs to: a policy naming #ops covers the bot's threads in #ops.
    const parent = needsThread ? message.channelId : inThread ? (channel.parentId ?? undefined) : undefined;
    const target: ReplyTarget = {
      platform: 'discord',
      channel: channelId,
      ...(message.guildId ? { workspace: message.guildId } : {}),
      ...(parent ? { parent } : {}),
    };
    const requester = requesterOf(message.author, { guildId: message.guildId, roles: message.member?.roles });
    // Someone the policy does not serve gets the refusal as a reply, and no turn.
    const admitted = ctx.approvals.mayUse(requester, target);
    if (!admitted.ok) {
      ctx.log.info({ author: message.author.id, guild: message.guildId }, 'message refused by the policy');
      await deps.outbound
        .post({ platform: 'discord', channel: message.channelId }, admitted.refusal)
        .catch((error: unknown) => ctx.log.warn({ err: error }, 'could not tell a person they were refused'));
      return;
    }
    const ids = {
      messageId: message.id,
      channel: message.channelId,
      guild: message.guildId ?? undefined,
      author: message.author.id,
    };
    let threadError: unknown;
    // Set once the thread exists: a retry after a commit that failed must not start it again.
    let threadStarted = false;
    const startThread = async () => {
      if (threadStarted) return;
      try {
        const thread = await message.startThread({ name: threadName(prompt) });
        if (thread.id !== channelId) throw new ThreadIdMismatch(`thread ${thread.id} for message ${message.id}`);
        threadStarted = true;
      } catch (error) {
        threadError = error;
        throw error;
      }
    };
    const delays = deps.enqueueRetryDelaysMs ?? ENQUEUE_RETRY_DELAYS_MS;
    for (let attempt = 0; ; attempt++) {
      try {
        // The message id is the dedupe key, marked in the same transaction as the enqueue: two
        // gateway sessions (two ingress replicas) receiving the same message make one turn. The
        // thread is created inside that transaction, so only the replica that takes the message
        // creates it, and a thread that cannot be created leaves nothing enqueued.
        const item = await enqueueInboundWorkItem(
          ctx.pool,
          `discord:${message.id}`,
          {
            type: 'CHAT',
            priority: Priority.CRITICAL,
            conversationId: isDm ? `discord:dm:${channelId}` : `discord:${channelId}`,
            requester,
            input: { prompt },
            payload: { messageId: message.id },
            reply: target,
            placeholder: '…',
            mode: ctx.approvals.conversationMode(target),
          },
          needsThread ? { beforeCommit: startThread } : {},
        );
        if (!item) ctx.log.debug(ids, 'Discord message already taken by another gateway session');
        else {
          // A card this message superseded (steer, interrupt) is closed in the database already; show it.
          ctx.approvals
            .showSuperseded(item.id)
            .catch((error: unknown) => ctx.log.warn({ err: error, ...ids }, 'could not show a superseded card'));
        }
        return;
      } catch (error) {
        if (threadError !== undefined) {
          ctx.log.warn({ err: threadError, ...ids }, 'could not start a Discord thread');
          await deps.outbound.post({ platform: 'discord', channel: message.channelId }, NO_THREAD);
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
  };
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
export function threadName(prompt: string): string {
  const line = prompt.replace(/\s+/g, ' ').trim();
  if (line.length <= LIMITS.threadName) return line || 'Countersign';
  return `${line.slice(0, LIMITS.threadName - 1)}…`;
}
