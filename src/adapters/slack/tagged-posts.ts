import type { WebClient } from '@slack/web-api';
import type { ReplyTarget } from '../../core/reply-target.ts';

/**
 * Finding again a message this app posted for a work item, when the attempt that posted it was killed
 * before recording its ts (a "…" placeholder). Slack has no idempotent post; instead the message
 * carries message metadata naming the work item, which conversations.replies / conversations.history
 * return with `include_all_metadata` (docs.slack.dev, "Using message metadata").
 */

/** The metadata event type of Countersign's reply messages. */
const REPLY_EVENT_TYPE = 'countersign_reply';

/** The metadata a reply message for `tag` (a work item id) is posted with. */
export function replyMetadata(tag: string): { event_type: string; event_payload: { work_item: string } } {
  return { event_type: REPLY_EVENT_TYPE, event_payload: { work_item: tag } };
}

/** Pages of a thread looked through; a placeholder is among a thread's newest messages. */
const MAX_PAGES = 5;
/** Top-level messages looked through (a reply outside a thread, in a DM): the newest only. */
const HISTORY_LIMIT = 100;

interface ListedMessage {
  ts?: string;
  bot_id?: string;
  metadata?: { event_type?: string; event_payload?: Record<string, unknown> };
}

/**
 * The ts of a message in the target's thread (or channel) posted by this app with `tag`'s metadata;
 * undefined when there is none. Only the app's own messages count: another app (or a person's
 * workflow) could post a message with the same metadata, and it must never be taken for ours.
 */
export async function findTaggedPost(
  client: WebClient,
  target: ReplyTarget,
  tag: string,
  botId: string,
): Promise<string | undefined> {
  const ours = (m: ListedMessage) =>
    m.bot_id === botId && m.metadata?.event_type === REPLY_EVENT_TYPE && m.metadata.event_payload?.work_item === tag;
  if (!target.thread) {
    const history = await client.conversations.history({
      channel: target.channel,
      include_all_metadata: true,
      limit: HISTORY_LIMIT,
    });
    return (history.messages as ListedMessage[] | undefined)?.find(ours)?.ts;
  }
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const replies = await client.conversations.replies({
      channel: target.channel,
      ts: target.thread,
      include_all_metadata: true,
      limit: 1000,
      ...(cursor ? { cursor } : {}),
    });
    const found = (replies.messages as ListedMessage[] | undefined)?.find(ours)?.ts;
    if (found) return found;
    cursor = replies.response_metadata?.next_cursor || undefined;
    if (!cursor) return undefined;
  }
  return undefined;
}
