import type { Message } from 'discord.js';
import type { AdapterContext } from '../platform.ts';
import type { ReplyTarget } from '../../reply/outbound.ts';
import { Priority } from '../../queue/work-item.ts';
import type { DiscordOutbound } from './outbound.ts';
import { LIMITS } from './limits.ts';
import { requesterOf, UNAVAILABLE } from './people.ts';

/** Shown once per thread when a follow-up arrives blank because the Message Content intent is off. */
export const MENTION_NEEDED =
  'I can only read messages that mention me here (the Message Content intent is not enabled for this bot). Mention me to continue.';

const NO_THREAD =
  'I could not start a thread on your message. Give me the Create Public Threads and Send Messages in Threads permissions in this channel, or DM me.';

export interface MessageDeps {
  outbound: DiscordOutbound;
  /** False when Discord refused the privileged Message Content intent and we connected without it. */
  readsContent: () => boolean;
}

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

    let channelId = message.channelId;
    if (!isDm && !inThread) {
      // A mention in a channel: the conversation continues in a thread on that message.
      try {
        const thread = await message.startThread({ name: threadName(prompt) });
        channelId = thread.id;
      } catch (error) {
        ctx.log.warn({ err: error, channel: message.channelId }, 'could not start a Discord thread');
        await deps.outbound.post({ platform: 'discord', channel: message.channelId }, NO_THREAD);
        return;
      }
    }
    const target: ReplyTarget = {
      platform: 'discord',
      channel: channelId,
      ...(message.guildId ? { workspace: message.guildId } : {}),
    };
    const placeholder = await deps.outbound.post(target, '…');
    try {
      await ctx.enqueue({
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: isDm ? `discord:dm:${channelId}` : `discord:${channelId}`,
        requester: requesterOf(message.author),
        input: { prompt },
        payload: { messageId: message.id },
        reply: { ...target, messageId: placeholder.messageId },
      });
    } catch (error) {
      ctx.log.error({ err: error, channel: channelId }, 'could not enqueue a Discord message');
      await deps.outbound.edit(target, placeholder.messageId, UNAVAILABLE);
    }
  };
}

/** A thread name Discord accepts: the start of the request, on one line. */
export function threadName(prompt: string): string {
  const line = prompt.replace(/\s+/g, ' ').trim();
  if (line.length <= LIMITS.threadName) return line || 'Countersign';
  return `${line.slice(0, LIMITS.threadName - 1)}…`;
}
