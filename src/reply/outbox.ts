import { z } from 'zod';
import { ReplyTarget } from '../core/reply-target.ts';
import type { Queryable } from '../db/pool.ts';
import { ReplyState } from './reply-state.ts';
import { toJsonb } from '../core/storable-text.ts';

/**
 * The reply outbox's SQL (countersign.reply_outbox), one statement per function. A row is what a
 * finished turn still has to show: the reply's final text (answer, stop, failure), where the reply
 * stands on the platform, and what to announce once it is visible. Written in the transaction that
 * settles the turn, so the worker slot is free as soon as the computation ended, and delivered by
 * any worker process (src/reply/outbox-deliverer.ts).
 */

const ReplyButtonRow = z.object({
  label: z.string(),
  value: z.string(),
  style: z.enum(['primary', 'danger', 'secondary']),
});

/** One reply waiting to be shown. */
export const OutboxRow = z.object({
  seq: z.coerce.string(),
  workItemId: z.string(),
  target: ReplyTarget,
  replyState: ReplyState,
  text: z.string(),
  buttons: z.array(ReplyButtonRow),
  /** Opaque to the outbox: handed back to whoever announces a delivered reply (the turn's event). */
  announce: z.unknown(),
  attempts: z.number().int(),
  /**
   * The work item whose reply must be visible before this one shows anything: the parked turn a
   * continuation carries on (its text may still wait here). Null: none.
   */
  afterWorkItemId: z.string().nullable(),
});
export type OutboxRow = z.infer<typeof OutboxRow>;

export type NewOutboxRow = Omit<OutboxRow, 'seq' | 'attempts' | 'afterWorkItemId'> & { afterWorkItemId?: string };

const COLUMNS = `seq, work_item_id::text AS "workItemId", target, reply_state AS "replyState", text, buttons,
                 announce, attempts, after_work_item::text AS "afterWorkItemId"`;

function parseRows(rows: unknown[]): OutboxRow[] {
  return rows.map((row) => OutboxRow.parse(row));
}

/**
 * Puts a reply in the outbox, locked to the process that will deliver it at once. A newer text for
 * the same reply replaces a pending one (the final wins over whatever was waiting).
 */
export async function insertOutboxRow(db: Queryable, row: NewOutboxRow, processId: string): Promise<OutboxRow> {
  const { rows } = await db.query(
    `INSERT INTO countersign.reply_outbox
       (work_item_id, target, reply_state, text, buttons, announce, locked_by, after_work_item)
     VALUES ($1::uuid, $2::jsonb, $3::jsonb, $4::text, $5::jsonb, $6::jsonb, $7::text, $8::uuid)
     ON CONFLICT (work_item_id) DO UPDATE SET
       target = EXCLUDED.target, reply_state = EXCLUDED.reply_state, text = EXCLUDED.text,
       buttons = EXCLUDED.buttons, announce = EXCLUDED.announce, locked_by = EXCLUDED.locked_by,
       after_work_item = EXCLUDED.after_work_item, available_at = now()
     RETURNING ${COLUMNS}`,
    [
      row.workItemId,
      toJsonb(row.target),
      toJsonb(row.replyState),
      row.text,
      toJsonb(row.buttons),
      toJsonb(row.announce ?? null),
      processId,
      row.afterWorkItemId ?? null,
    ],
  );
  return parseRows(rows)[0]!;
}

/**
 * Takes up to `limit` rows nobody delivers: unlocked (a delivery that failed and waits to be tried
 * again) or locked by a process that no longer has a heartbeat (killed; worker-liveness removed
 * it). Oldest first; rows another process is claiming right now are skipped.
 */
export async function claimOrphanedRows(db: Queryable, processId: string, limit: number): Promise<OutboxRow[]> {
  const { rows } = await db.query(
    `UPDATE countersign.reply_outbox SET locked_by = $1::text
     WHERE seq IN (
       SELECT o.seq FROM countersign.reply_outbox o
       WHERE o.available_at <= now()
         AND (o.locked_by IS NULL
              OR NOT EXISTS (SELECT 1 FROM countersign.worker_processes p WHERE p.id = o.locked_by))
       ORDER BY o.seq LIMIT $2::int
       FOR UPDATE SKIP LOCKED)
     RETURNING ${COLUMNS}`,
    [processId, limit],
  );
  return parseRows(rows);
}

/**
 * Takes over the row of one work item when nobody delivers it (unlocked, or locked by a process with
 * no heartbeat), whether or not a failed delivery's rest is over: something waits for exactly this
 * reply (a continuation, for the text of the turn it carries on). In the same statement, so that a
 * reply waiting on another process's delivery looks once per poll: whether a row is still there
 * (`waiting`) when none was claimed (there is none, or a live process holds it).
 */
export async function claimRowOf(
  db: Queryable,
  workItemId: string,
  processId: string,
): Promise<{ claimed: OutboxRow } | { claimed?: undefined; waiting: boolean }> {
  const { rows } = await db.query<{ claimed: boolean }>(
    `WITH claimed AS (
       UPDATE countersign.reply_outbox o SET locked_by = $2::text
       WHERE o.work_item_id = $1::uuid
         AND (o.locked_by IS NULL
              OR NOT EXISTS (SELECT 1 FROM countersign.worker_processes p WHERE p.id = o.locked_by))
       RETURNING ${COLUMNS}
     )
     SELECT true AS claimed, c.* FROM claimed c
     UNION ALL
     SELECT false AS claimed, ${COLUMNS} FROM countersign.reply_outbox
     WHERE work_item_id = $1::uuid AND NOT EXISTS (SELECT 1 FROM claimed)`,
    [workItemId, processId],
  );
  const [row] = rows;
  if (row?.claimed) return { claimed: OutboxRow.parse(row) };
  return { waiting: row !== undefined };
}

/** The reply of this work item that waits in the outbox, if one does. */
export async function findRowOf(db: Queryable, workItemId: string): Promise<OutboxRow | undefined> {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM countersign.reply_outbox WHERE work_item_id = $1::uuid`, [
    workItemId,
  ]);
  return parseRows(rows)[0];
}

/** Whether a reply of this work item still waits in the outbox (not yet visible). */
export async function hasRowOf(db: Queryable, workItemId: string): Promise<boolean> {
  const { rowCount } = await db.query(`SELECT 1 FROM countersign.reply_outbox WHERE work_item_id = $1::uuid`, [
    workItemId,
  ]);
  return Boolean(rowCount);
}

/**
 * Records where the reply stands after a platform call (a message posted), before anything else is
 * sent: a process taking the row over edits those messages instead of posting them again. False
 * when the row is no longer this process's (taken over while this one was cut off).
 */
export async function recordReplyState(
  db: Queryable,
  seq: string,
  processId: string,
  state: ReplyState,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE countersign.reply_outbox SET reply_state = $3::jsonb WHERE seq = $1::bigint AND locked_by = $2::text`,
    [seq, processId, toJsonb(state)],
  );
  return rowCount === 1;
}

/** The reply is visible: the row goes. False when it was no longer this process's to remove. */
export async function removeDelivered(db: Queryable, seq: string, processId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `DELETE FROM countersign.reply_outbox WHERE seq = $1::bigint AND locked_by = $2::text`,
    [seq, processId],
  );
  return rowCount === 1;
}

/**
 * A delivery failed (`failed`: counted as an attempt) or this process stops: any process may try the
 * row again after `delayMs`.
 */
export async function releaseRow(
  db: Queryable,
  seq: string,
  processId: string,
  { delayMs, failed }: { delayMs: number; failed: boolean },
): Promise<void> {
  await db.query(
    `UPDATE countersign.reply_outbox
        SET locked_by = NULL, attempts = attempts + $4::int,
            available_at = now() + make_interval(secs => $3::float8 / 1000)
      WHERE seq = $1::bigint AND locked_by = $2::text`,
    [seq, processId, delayMs, failed ? 1 : 0],
  );
}
