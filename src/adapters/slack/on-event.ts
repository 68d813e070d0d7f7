import type { AdapterContext } from '../platform.ts';
import { Priority, type WorkItemDraft } from '../../core/work-item.ts';

/** The fields of a Slack `app_mention` or `message` event that decide whether and how we answer. */
export interface SlackMessageEvent {
  type: string;
  subtype?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  channel: string;
  channel_type?: string;
}

/** One Events API delivery, as the wiring hands it over (the receiver holds its acknowledgement). */
export interface SlackDelivery {
  team: string;
  eventId: string;
  /** Slack's X-Slack-Retry-Num / retry_attempt: how many times this delivery was already tried. */
  retryNum?: number;
  event: SlackMessageEvent;
}

export interface EventDeps {
  botUserId: string;
  /** Enqueues the delivery's work item, deduplicated by its event id (see inbound.ts). */
  take(delivery: SlackDelivery, draft: WorkItemDraft): Promise<void>;
}

/**
 * Mentions and messages. Mentions get a threaded reply, DMs a reply in the DM, and follow-ups in a
 * thread the bot is already in need no mention. No platform call happens here: the worker posts the
 * "…" placeholder.
 */
export function createEventHandlers(ctx: AdapterContext, deps: EventDeps) {
  const { botUserId } = deps;

  const conversationOf = (team: string, event: SlackMessageEvent, thread: string | undefined) =>
    event.channel_type === 'im' ? `slack:${team}:dm:${event.channel}` : `slack:${team}:${event.channel}:${thread}`;

  const takeMessage = async (delivery: SlackDelivery): Promise<void> => {
    const { team, eventId, event } = delivery;
    const prompt = (event.text ?? '').replace(new RegExp(`<@${botUserId}>`, 'g'), '').trim();
    if (!prompt || !event.user) return;
    const isDm = event.channel_type === 'im';
    const thread = isDm ? event.thread_ts : (event.thread_ts ?? event.ts);
    await deps.take(delivery, {
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: conversationOf(team, event, thread),
      requester: { platform: 'slack', userId: event.user },
      input: { prompt },
      payload: { ts: event.ts, eventId },
      reply: {
        platform: 'slack',
        channel: event.channel,
        workspace: team,
        recipient: event.user,
        ...(thread ? { thread } : {}),
      },
      placeholder: '…',
    });
  };

  /** `app_mention`: always answered, unless a bot wrote it. */
  const onMention = async (delivery: SlackDelivery): Promise<void> => {
    if (delivery.event.bot_id) return;
    await takeMessage(delivery);
  };

  /** `message`: DMs, and follow-ups in a thread that is already a conversation. */
  const onMessage = async (delivery: SlackDelivery): Promise<void> => {
    const { team, event: e } = delivery;
    // Bots (this one included), edits, joins and other subtypes are not messages to answer.
    if (e.subtype || e.bot_id || !e.user || e.user === botUserId) return;
    if (e.channel_type === 'im') return takeMessage(delivery);
    // A mention arrives as app_mention too; answer it once.
    if ((e.text ?? '').includes(`<@${botUserId}>`) || !e.thread_ts) return;
    const { rowCount } = await ctx.pool.query('SELECT 1 FROM countersign.conversations WHERE id = $1', [
      conversationOf(team, e, e.thread_ts),
    ]);
    if (rowCount) await takeMessage(delivery);
  };

  return { onMention, onMessage };
}
