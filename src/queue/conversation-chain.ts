import type { Queryable } from '../db/pool.ts';
import type { Message } from '../agent/messages.ts';
import { BACKGROUND_TASK, INTERACTIVE_TASK, Priority, taskFor, type WorkItem } from './work-item.ts';

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
 */

/**
 * Appends a work item to its conversation and schedules it at once if the conversation is idle
 * (countersign.enqueue_work_item, one round trip). Works alone or inside a caller's transaction.
 */
export async function appendToConversation(db: Queryable, item: WorkItem): Promise<{ started: boolean }> {
  const { rows } = await db.query<{ started: boolean }>({
    name: 'cs_enqueue_work_item',
    text: 'SELECT countersign.enqueue_work_item($1, $2, $3, $4, $5, $6, $7, $8) AS started',
    values: [
      item.id,
      item.conversationId,
      item.reply.platform,
      item.type,
      item.priority,
      JSON.stringify(item),
      item.createdAt,
      taskFor(item.priority),
    ],
  });
  return { started: rows[0]?.started ?? false };
}

/**
 * Like `appendToConversation`, for the work item of one platform event: the event's dedupe mark
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
    values: [
      eventId,
      item.id,
      item.conversationId,
      item.reply.platform,
      item.type,
      item.priority,
      JSON.stringify(item),
      item.createdAt,
      taskFor(item.priority),
    ],
  });
  const started = rows[0]?.started ?? null;
  return { duplicate: started === null, started: started === true };
}

/** The arguments that let the database pick a job's task from its priority the way `taskFor` does. */
function taskRule(): [interactiveTask: string, backgroundTask: string, interactiveMaxPriority: number] {
  return [INTERACTIVE_TASK, BACKGROUND_TASK, Priority.HIGH];
}

/**
 * Moves the conversation's head past `workItemId` (which just reached a resting state) and schedules
 * the next queued item, if any (countersign.advance_conversation, one round trip). Call inside the
 * transaction that records the item's new status.
 */
export async function advanceConversation(db: Queryable, conversationId: string, workItemId: string): Promise<void> {
  await db.query('SELECT countersign.advance_conversation($1, $2, $3, $4, $5)', [
    conversationId,
    workItemId,
    ...taskRule(),
  ]);
}

export interface Settlement {
  status: 'awaiting_approval' | 'done' | 'failed' | 'cancelled';
  result?: unknown;
  error?: string;
  /** Messages to append to the conversation's history. */
  messages?: Message[];
  /** Drop the turn's checkpoint (it is complete). */
  deleteCheckpoint?: boolean;
}

/**
 * Puts a work item into a resting status, appends its messages to the history, hands the
 * conversation to its next item and drops the checkpoint — one statement
 * (countersign.settle_work_item), so all of it commits or none of it does. Works alone or inside a
 * caller's transaction.
 */
export async function settleWorkItem(
  db: Queryable,
  item: { id: string; conversationId: string },
  settlement: Settlement,
): Promise<void> {
  await db.query({
    name: 'cs_settle_work_item',
    text: 'SELECT countersign.settle_work_item($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
    values: [
      item.id,
      item.conversationId,
      settlement.status,
      settlement.result === undefined ? null : JSON.stringify(settlement.result),
      settlement.error ?? null,
      settlement.messages && settlement.messages.length > 0 ? JSON.stringify(settlement.messages) : null,
      settlement.deleteCheckpoint ?? false,
      ...taskRule(),
    ],
  });
}
