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

/**
 * Conversations idle past the retention period with no work left (run after pruneHistory). Returns
 * their ids, so the platforms can close what they show for them (Slack's agent sessions).
 */
export async function pruneIdleConversations(db: Queryable, days: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `DELETE FROM countersign.conversations c
     WHERE c.active_work_item IS NULL AND c.last_activity_at < now() - make_interval(days => $1)
       AND NOT EXISTS (SELECT 1 FROM countersign.work_items w WHERE w.conversation_id = c.id)
     RETURNING c.id`,
    [days],
  );
  return rows.map((r) => r.id);
}

/** Approval audit rows, and the per-minute counts of rejections past the audit budget, older than the retention. */
export async function pruneAudit(db: Queryable, days: number): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `WITH old_audit AS (
       DELETE FROM countersign.approval_audit WHERE at < now() - make_interval(days => $1) RETURNING 1
     ), old_budget AS (
       DELETE FROM countersign.approval_audit_budget WHERE window_start < now() - make_interval(days => $1) RETURNING 1
     )
     SELECT (SELECT count(*) FROM old_audit) + (SELECT count(*) FROM old_budget) AS n`,
    [days],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * How long an inbound event's dedupe mark is kept. Slack retries an Events API delivery it saw fail
 * up to 3 times, the last well within an hour of the event (the Slack adapter's LIMITS.eventRetries
 * and LIMITS.eventLastRetryMinutes, which test/slack/limits.test.ts holds this against); Discord never
 * redelivers (its marks only stop two gateway sessions taking the same message at once). A mark pruned
 * before the last retry arrives would let that retry make a second turn, so the window is Slack's hour
 * plus a 1 hour margin for clock skew between Slack and the database and for deliveries queued behind
 * an outage.
 */
export const INBOUND_EVENT_RETENTION_HOURS = 2;

/** Dedupe marks of inbound events older than any redelivery of them (INBOUND_EVENT_RETENTION_HOURS). */
export async function pruneInboundEvents(db: Queryable, hours = INBOUND_EVENT_RETENTION_HOURS): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM countersign.inbound_events WHERE received_at < now() - make_interval(hours => $1)`,
    [hours],
  );
  return rowCount ?? 0;
}

/**
 * How long a rate bucket may sit unused before it is dropped. A bucket left alone refills, and a full
 * bucket behaves exactly like a missing one (the first take creates it full); every bucket Countersign
 * uses refills in minutes (even one driven negative by replies waiting for it), so after an hour
 * idle each one is full.
 */
const RATE_BUCKET_IDLE_MINUTES = 60;

/** Rate buckets of channels and workspaces no reply has touched for RATE_BUCKET_IDLE_MINUTES. */
export async function pruneIdleRateBuckets(db: Queryable, minutes = RATE_BUCKET_IDLE_MINUTES): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM countersign.rate_buckets WHERE updated_at < now() - make_interval(mins => $1)`,
    [minutes],
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

/**
 * Withdraws the cards a process-bound session's parked turns wait on, because its input ended and
 * nobody is left to answer them (src/adapters/console): they expire now, and expiring them
 * (src/approval/expire.ts) cancels their turns as for any card nobody answered. Returns how many.
 * Without this each piped run that ended at a card left a turn "waiting for a click" for the card's
 * whole lifetime, listed by every /status.
 */
export async function expireSessionCards(db: Queryable, platform: string, session: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE countersign.approval_envelopes e SET expires_at = now()
     FROM countersign.work_items w
     WHERE e.work_item_id = w.id AND e.status = 'pending' AND w.status = 'awaiting_approval'
       AND w.item->'reply'->>'platform' = $1::text AND w.item->'reply'->>'channel' = $2::text`,
    [platform, session],
  );
  return rowCount ?? 0;
}
