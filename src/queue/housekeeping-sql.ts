import type { Queryable } from '../db/pool.ts';

/** Housekeeping statements, one per function. Time is the database's. */

/** Checkpoints left behind by turns that reached a final status (a crash between the two writes). */
export async function pruneFinishedCheckpoints(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM countersign.turn_checkpoints c USING countersign.work_items w
     WHERE w.id = c.work_item_id AND w.status IN ('done', 'failed', 'cancelled')`,
  );
  return rowCount ?? 0;
}

/** Conversation history and finished work older than the retention period. */
export async function pruneHistory(db: Queryable, days: number): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `WITH old_messages AS (
       DELETE FROM countersign.messages WHERE created_at < now() - make_interval(days => $1) RETURNING 1
     ), old_items AS (
       DELETE FROM countersign.work_items
       WHERE status IN ('done', 'failed', 'cancelled') AND coalesce(finished_at, created_at) < now() - make_interval(days => $1)
       RETURNING id
     ), old_rounds AS (
       DELETE FROM countersign.model_rounds WHERE created_at < now() - make_interval(days => $1) RETURNING 1
     ), old_tools AS (
       DELETE FROM countersign.tool_executions WHERE started_at < now() - make_interval(days => $1) RETURNING 1
     ), old_envelopes AS (
       DELETE FROM countersign.approval_envelopes
       WHERE status <> 'pending' AND created_at < now() - make_interval(days => $1) RETURNING 1
     )
     SELECT (SELECT count(*) FROM old_messages) + (SELECT count(*) FROM old_items) + (SELECT count(*) FROM old_rounds)
          + (SELECT count(*) FROM old_tools) + (SELECT count(*) FROM old_envelopes) AS n`,
    [days],
  );
  return Number(rows[0]?.n ?? 0);
}

/** Conversations idle past the retention period with no work left (run after pruneHistory). */
export async function pruneIdleConversations(db: Queryable, days: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM countersign.conversations c
     WHERE c.active_work_item IS NULL AND c.last_activity_at < now() - make_interval(days => $1)
       AND NOT EXISTS (SELECT 1 FROM countersign.work_items w WHERE w.conversation_id = c.id)`,
    [days],
  );
  return rowCount ?? 0;
}

export async function pruneAudit(db: Queryable, days: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM countersign.approval_audit WHERE at < now() - make_interval(days => $1)`,
    [days],
  );
  return rowCount ?? 0;
}

/** graphile-worker's bookkeeping: named queues no job uses any more, and jobs that failed for good. */
export async function cleanGraphileWorker(db: Queryable): Promise<void> {
  await db.query(
    `DELETE FROM graphile_worker._private_job_queues q
     WHERE locked_at IS NULL AND NOT EXISTS (SELECT 1 FROM graphile_worker._private_jobs j WHERE j.job_queue_id = q.id)`,
  );
}
