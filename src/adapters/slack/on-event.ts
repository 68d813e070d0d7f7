import type { AdapterContext, AdmissionRequest } from '../platform.ts';
import { Priority } from '../../core/work-item.ts';
import { TEXTS } from '../../core/texts.ts';
import { SLACK_RULES } from './rules.ts';
import { LIMITS } from './limits.ts';
import { slackConversationId } from './conversation-ids.ts';
import type { SlackOutbound } from './outbound.ts';
import type { SlackUserGroups } from './user-groups.ts';
import { fileRefsOf, type SlackEventFile } from './files.ts';

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
  /** The team that issued `user`: another org's for a Slack Connect user (also in `team` on messages). */
  user_team?: string;
  team?: string;
  /** A `file_share` message's files: recorded with the turn, downloaded by the worker (src/files). */
  files?: SlackEventFile[];
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
  outbound: SlackOutbound;
  groups: SlackUserGroups;
}

/** The delivery carrying this retry number is Slack's last, so only then is the person told. */
const LAST_SLACK_RETRY = LIMITS.eventRetries;

/**
 * `message` subtypes that are still a person writing: a thread reply also sent to the channel
 * (`thread_broadcast`, with `thread_ts` like any reply) and a message with files (`file_share`,
 * whose files go with the turn). Edits, deletions, joins, bot messages and the rest are
 * not messages to answer.
 */
const ANSWERED_SUBTYPES = new Set(['thread_broadcast', 'file_share']);

/**
 * Mentions and messages. Mentions get a threaded reply, DMs a reply in the DM, and follow-ups in a
 * thread the bot is already in need no mention. No platform call happens here: the worker posts the
 * "…" placeholder.
 */
export function createEventHandlers(ctx: AdapterContext, deps: EventDeps) {
  const { botUserId } = deps;
  const { log } = ctx;

  /**
   * Asks the core for the delivery's turn, with the event id as its dedupe key (mark and item in one
   * statement), before the receiver acknowledges it: a delivery we could not take is redelivered by
   * Slack, and a retried one is taken once. Someone the policy does not serve gets a word only they
   * see, and no turn.
   */
  const take = async (delivery: SlackDelivery, request: AdmissionRequest): Promise<void> => {
    const { eventId, team, retryNum, event } = delivery;
    const ids = { eventId, channel: event.channel, ts: event.ts, team, retryNum: retryNum ?? 0 };
    try {
      const admitted = await ctx.admit(request);
      if (!admitted.ok) {
        await deps.outbound
          .ephemeral(event.channel, request.requester.userId, admitted.refusal, request.place.thread)
          .catch((error: unknown) => log.warn({ err: error }, 'could not tell a person they were refused'));
      } else if (!admitted.item) log.debug(ids, 'Slack event already taken; acknowledging the redelivery');
    } catch (error) {
      // Rethrown: the delivery goes unacknowledged and Slack retries it. Only its last retry is
      // answered in the thread, so a person is never left without a word.
      if ((retryNum ?? 0) >= LAST_SLACK_RETRY) {
        log.error({ err: error, ...ids }, 'could not enqueue a Slack message on its last delivery; it is lost');
        await deps.outbound.post(request.place, TEXTS.unavailable).catch(() => undefined);
      }
      throw error;
    }
  };

  /**
   * `mention`: an app_mention, which carries none of its message's files; the worker reads them from
   * the message (conversations.replies/history), and a bare mention may be all the text a file has.
   */
  const takeMessage = async (delivery: SlackDelivery, mention = false): Promise<void> => {
    const { team, eventId, event } = delivery;
    const prompt = (event.text ?? '').replace(new RegExp(`<@${botUserId}>`, 'g'), '').trim();
    const files = fileRefsOf(event.files);
    if ((!prompt && files.length === 0 && !mention) || !event.user) return;
    const isDm = event.channel_type === 'im';
    const thread = isDm ? event.thread_ts : (event.thread_ts ?? event.ts);
    const requester = await deps.groups.personOf(event.user, event.user_team ?? event.team ?? team, team);
    const reply = {
      platform: SLACK_RULES.name,
      channel: event.channel,
      workspace: team,
      recipient: event.user,
      ...(thread ? { thread } : {}),
    };
    await take(delivery, {
      requester,
      place: reply,
      eventId,
      draft: {
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: slackConversationId(team, event.channel, isDm ? undefined : thread),
        input: { prompt, ...(files.length ? { files } : mention ? { filesOfMessage: event.ts } : {}) },
        payload: { ts: event.ts, eventId },
        reply,
        placeholder: '…',
      },
    });
  };

  /** `app_mention`: always answered, unless a bot wrote it. */
  const onMention = async (delivery: SlackDelivery): Promise<void> => {
    if (delivery.event.bot_id) return;
    await takeMessage(delivery, true);
  };

  /** `message`: DMs, and follow-ups in a thread that is already a conversation. */
  const onMessage = async (delivery: SlackDelivery): Promise<void> => {
    const { team, event: e } = delivery;
    // Bots (this one included), edits, joins and other subtypes are not messages to answer.
    if ((e.subtype && !ANSWERED_SUBTYPES.has(e.subtype)) || e.bot_id || !e.user || e.user === botUserId) return;
    if (e.channel_type === 'im') return takeMessage(delivery);
    // A mention arrives as app_mention too; answer it once.
    if ((e.text ?? '').includes(`<@${botUserId}>`) || !e.thread_ts) return;
    if (await ctx.conversationExists(slackConversationId(team, e.channel, e.thread_ts))) await takeMessage(delivery);
  };

  return { onMention, onMessage };
}
