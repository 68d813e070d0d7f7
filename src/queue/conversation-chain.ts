import type { PoolClient, Queryable } from '../db/pool.ts';
import { taskFor, type WorkItem } from './work-item.ts';

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

async function addJob(client: PoolClient, item: { id: string; priority: number }): Promise<void> {
  await client.query(
    `SELECT graphile_worker.add_job($1::text, json_build_object('workItemId', $2::text), priority => $3::int, max_attempts => 25)`,
    [taskFor(item.priority), item.id, item.priority],
  );
}

/**
 * Appends a work item to its conversation and schedules it at once if the conversation is idle
 * (countersign.enqueue_work_item, one round trip). Works alone or inside a caller's transaction.
 */
export async function appendToConversation(db: Queryable, item: WorkItem): Promise<{ started: boolean }> {
  const { rows } = await db.query<{ started: boolean }>(
    'SELECT countersign.enqueue_work_item($1, $2, $3, $4, $5, $6, $7, $8) AS started',
    [
      item.id,
      item.conversationId,
      item.reply.platform,
      item.type,
      item.priority,
      JSON.stringify(item),
      item.createdAt,
      taskFor(item.priority),
    ],
  );
  return { started: rows[0]?.started ?? false };
}

/**
 * Moves the conversation's head past `workItemId` (which just reached a resting state) and schedules
 * the next queued item, if any. Call inside the transaction that records the item's new status.
 */
export async function advanceConversation(
  client: PoolClient,
  conversationId: string,
  workItemId: string,
): Promise<void> {
  const head = await client.query<{ active_work_item: string | null }>(
    'SELECT active_work_item FROM countersign.conversations WHERE id = $1 FOR UPDATE',
    [conversationId],
  );
  // Someone else already advanced past us (a replayed job finishing twice): nothing to hand over.
  if (head.rows[0]?.active_work_item !== workItemId) return;
  const next = await client.query<{ id: string; priority: number }>(
    `SELECT id, priority FROM countersign.work_items
     WHERE conversation_id = $1 AND status = 'queued' ORDER BY seq LIMIT 1`,
    [conversationId],
  );
  const nextItem = next.rows[0];
  await client.query('UPDATE countersign.conversations SET active_work_item = $2 WHERE id = $1', [
    conversationId,
    nextItem?.id ?? null,
  ]);
  if (nextItem) await addJob(client, nextItem);
}
