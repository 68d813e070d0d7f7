import type { Queryable } from '../../db/pool.ts';
import type { WorkItem } from '../../core/work-item.ts';
import { toJsonb } from '../../core/storable-text.ts';
import { turnJobFor } from '../tasks/index.ts';

/**
 * Per-conversation ordering without a graphile-worker queue per conversation.
 *
 * graphile-worker's named queues would serialise a conversation, but each name is a row that job
 * selection has to consider, and the docs warn against high-cardinality names (100,000 conversations
 * would be 100,000 queues). Instead, a conversation is a chain: only its head work item has a job.
 * Enqueueing appends to the chain and adds a job only when the conversation is idle; finishing an
 * item hands the head to the next queued item and adds its job, in the same transaction. Both sides
 * lock the conversation row, so the hand-over can't race an enqueue. The job table only ever holds
 * one job per busy conversation, and different conversations run in parallel.
 *
 * Every enqueue fires countersign.supersede_parked_turns (trigger AFTER INSERT ON work_items,
 * migrations 012 and 017): a steer/interrupt message from the requester of a pending card calls
 * countersign.supersede_pending_cards (017), which marks the card superseded (approval_envelopes),
 * cancels the parked turn (work_items), writes its withdrawn history (messages) and an audit row
 * (approval_audit).
 */

/** The arguments of countersign.enqueue_work_item (and, after the event id, of its inbound form). */
function enqueueArguments(item: WorkItem): unknown[] {
  return [
    item.id,
    item.conversationId,
    item.reply.platform,
    item.type,
    item.priority,
    toJsonb(item),
    item.createdAt,
    turnJobFor(item.priority).name,
  ];
}

/**
 * Appends a work item to its conversation and schedules it at once if the conversation is idle
 * (countersign.enqueue_work_item, migrations 004 and 006: inserts the item, upserts its conversation,
 * adds the job when the conversation is idle; one round trip). Works alone or inside a caller's
 * transaction.
 */
export async function appendToConversation(db: Queryable, item: WorkItem): Promise<{ started: boolean }> {
  const { rows } = await db.query<{ started: boolean }>({
    name: 'cs_enqueue_work_item',
    text: 'SELECT countersign.enqueue_work_item($1, $2, $3, $4, $5, $6, $7, $8) AS started',
    values: enqueueArguments(item),
  });
  return { started: rows[0]?.started ?? false };
}

/**
 * Like `appendToConversation`, for the work item of one platform event
 * (countersign.enqueue_inbound_work_item, migration 007): the event's dedupe mark
 * (countersign.inbound_events) is inserted in the same statement, so the mark exists exactly when
 * the item does. `{ duplicate: true }` when the event was already taken — nothing was enqueued.
 */
export async function appendInboundToConversation(
  db: Queryable,
  eventId: string,
  item: WorkItem,
): Promise<{ duplicate: boolean; started: boolean }> {
  const { rows } = await db.query<{ started: boolean | null }>({
    name: 'cs_enqueue_inbound_work_item',
    text: 'SELECT countersign.enqueue_inbound_work_item($1, $2, $3, $4, $5, $6, $7, $8, $9) AS started',
    values: [eventId, ...enqueueArguments(item)],
  });
  const started = rows[0]?.started ?? null;
  return { duplicate: started === null, started: started === true };
}
