import type { Queryable } from '../../db/pool.ts';
import type { WorkItem } from '../../core/work-item.ts';

/** Whether anything is queued behind `item` in its conversation (src/queue/follow-ups.ts). */
export async function anyQueuedBehind(db: Queryable, item: Pick<WorkItem, 'id' | 'conversationId'>): Promise<boolean> {
  const { rows } = await db.query<{ waiting: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM countersign.work_items
                     WHERE conversation_id = $1 AND status = 'queued' AND id <> $2) AS waiting`,
    [item.conversationId, item.id],
  );
  return rows[0]?.waiting === true;
}

/** The items queued behind `item` in its conversation, in arrival order, locked until the transaction ends. */
export async function lockQueuedBehind(
  db: Queryable,
  item: Pick<WorkItem, 'id' | 'conversationId'>,
): Promise<Array<{ id: string; item: unknown }>> {
  const { rows } = await db.query<{ id: string; item: unknown }>(
    `SELECT id, item FROM countersign.work_items
      WHERE conversation_id = $1 AND status = 'queued' AND id <> $2
      ORDER BY seq
      FOR UPDATE`,
    [item.conversationId, item.id],
  );
  return rows;
}

/** Marks queued items done, taken over by the turn `intoWorkItemId` (src/queue/follow-ups.ts). Call with their lock held. */
export async function markQueuedItemsTaken(db: Queryable, ids: string[], intoWorkItemId: string): Promise<void> {
  await db.query(
    `UPDATE countersign.work_items
        SET status = 'done', finished_at = now(), result = jsonb_build_object('takenInto', $2::text)
      WHERE id = ANY($1::uuid[]) AND status = 'queued'`,
    [ids, intoWorkItemId],
  );
}
