import type { Queryable } from '../../db/pool.ts';
import type { WorkItem } from '../../core/work-item.ts';
import { toJsonb } from '../../core/storable-text.ts';

/** A parked turn whose card was decided: done, pointing at the continuation that carries on. */
export async function markParkedTurnContinued(
  db: Queryable,
  workItemId: string,
  continuationId: string,
): Promise<void> {
  await db.query(
    `UPDATE countersign.work_items SET status = 'done', result = $2, finished_at = now()
     WHERE id = $1 AND status = 'awaiting_approval'`,
    [workItemId, toJsonb({ continuation: continuationId })],
  );
}

/** A parked turn whose card expired: cancelled (its conversation is advanced separately). */
export async function cancelParkedTurn(db: Queryable, workItemId: string, error: string): Promise<void> {
  await db.query(
    `UPDATE countersign.work_items SET status = 'cancelled', error = $2 WHERE id = $1 AND status = 'awaiting_approval'`,
    [workItemId, error],
  );
}

/**
 * The parked turn a continuation carries on (marked done with `{ continuation }` when its card was
 * decided), looked up among the items of its approval context (the first item and its continuations,
 * both indexed); undefined for an item that continues none.
 */
export async function parkedTurnContinuedBy(
  db: Queryable,
  continuation: Pick<WorkItem, 'id' | 'input'>,
): Promise<string | undefined> {
  const context = continuation.input.approvalContextId;
  if (!context) return undefined;
  const { rows } = await db.query<{ id: string }>(
    `SELECT id::text AS id FROM countersign.work_items
      WHERE (id = $1::uuid OR item->'input'->>'approvalContextId' = $1::text)
        AND result->>'continuation' = $2::text`,
    [context, continuation.id],
  );
  return rows[0]?.id;
}
