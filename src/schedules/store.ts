import { z } from 'zod';
import { Requester } from '../core/person.ts';
import { ReplyTarget } from '../core/reply-target.ts';
import type { Queryable } from '../db/pool.ts';
import type { When } from './when.ts';

/**
 * The SQL of countersign.schedules and countersign.schedule_runs (migration 025), one statement per
 * function. Times that decide a slot are passed in (`now`): the scheduler's clock is a parameter, so
 * a test can move it across a DST change or a day of downtime without waiting.
 */

export const ScheduleRow = z.object({
  id: z.uuid(),
  owner: Requester,
  owner_key: z.string(),
  place: ReplyTarget,
  conversation_id: z.string(),
  when_text: z.string(),
  kind: z.enum(['cron', 'every', 'once']),
  pattern: z.string().nullable(),
  time_zone: z.string(),
  every_seconds: z.number().int().nullable(),
  starts_at: z.date().nullable(),
  task: z.string(),
  background: z.boolean(),
  catch_up: z.enum(['latest', 'none']),
  status: z.enum(['active', 'paused', 'finished']),
  paused_reason: z.string().nullable(),
  next_run_at: z.date().nullable(),
  consecutive_failures: z.number().int(),
  created_at: z.date(),
});
export type ScheduleRow = z.infer<typeof ScheduleRow>;

export type RunOutcome = 'running' | 'done' | 'failed' | 'expired' | 'cancelled' | 'refused';

const RunRow = z.object({
  schedule_id: z.uuid(),
  slot: z.date(),
  work_item_id: z.uuid().nullable(),
  outcome: z.enum(['running', 'done', 'failed', 'expired', 'cancelled', 'refused']),
  detail: z.string().nullable(),
  reply: ReplyTarget.nullable(),
  /** The platform's link to the message the run answered in, once it came to rest (migration 029). */
  link: z.string().nullable(),
  finished_at: z.date().nullable(),
});
export type RunRow = z.infer<typeof RunRow>;

/** The WHEN of a stored schedule. */
export function whenOf(row: ScheduleRow): When {
  switch (row.kind) {
    case 'cron':
      return { kind: 'cron', pattern: row.pattern ?? '', timeZone: row.time_zone };
    case 'every':
      return { kind: 'every', everySeconds: row.every_seconds ?? 0, startsAt: row.starts_at ?? row.created_at };
    case 'once':
      return { kind: 'once', at: row.starts_at ?? row.created_at, timeZone: row.time_zone };
  }
}

export interface NewSchedule {
  id: string;
  owner: Requester;
  ownerKey: string;
  place: ReplyTarget;
  conversationId: string;
  whenText: string;
  when: When;
  task: string;
  background: boolean;
  catchUp: 'latest' | 'none';
  nextRunAt: Date;
}

export async function insertSchedule(db: Queryable, s: NewSchedule): Promise<ScheduleRow> {
  const { when } = s;
  const { rows } = await db.query(
    `INSERT INTO countersign.schedules (id, owner, owner_key, place, conversation_id, when_text, kind, pattern,
       time_zone, every_seconds, starts_at, task, background, catch_up, next_run_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id
     RETURNING *`,
    [
      s.id,
      JSON.stringify(s.owner),
      s.ownerKey,
      JSON.stringify(s.place),
      s.conversationId,
      s.whenText,
      when.kind,
      when.kind === 'cron' ? when.pattern : null,
      when.kind === 'every' ? 'UTC' : when.timeZone,
      when.kind === 'every' ? when.everySeconds : null,
      when.kind === 'every' ? when.startsAt : when.kind === 'once' ? when.at : null,
      s.task,
      s.background,
      s.catchUp,
      s.nextRunAt,
    ],
  );
  return ScheduleRow.parse(rows[0]);
}

/** How many schedules a person has that are not finished (the per-person limit counts these). */
export async function countLiveSchedulesOf(db: Queryable, ownerKey: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM countersign.schedules WHERE owner_key = $1 AND status <> 'finished'`,
    [ownerKey],
  );
  return rows[0]?.n ?? 0;
}

/**
 * The most overdue active schedule whose slot has come by `now`, locked for the caller's transaction;
 * a schedule another scheduler holds is skipped, not waited for.
 */
export async function claimDueSchedule(db: Queryable, now: Date): Promise<ScheduleRow | undefined> {
  const { rows } = await db.query(
    `SELECT * FROM countersign.schedules
      WHERE status = 'active' AND next_run_at <= $1
      ORDER BY next_run_at LIMIT 1
      FOR UPDATE SKIP LOCKED`,
    [now],
  );
  return rows[0] ? ScheduleRow.parse(rows[0]) : undefined;
}

/** Records a slot's run; false when the slot has one already (another scheduler made it). */
export async function insertRun(
  db: Queryable,
  run: {
    scheduleId: string;
    slot: Date;
    workItemId: string | null;
    outcome: RunOutcome;
    detail?: string;
    reply?: ReplyTarget;
  },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO countersign.schedule_runs (schedule_id, slot, work_item_id, outcome, detail, reply, finished_at)
     VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $4 = 'running' THEN NULL ELSE now() END)
     ON CONFLICT (schedule_id, slot) DO NOTHING`,
    [
      run.scheduleId,
      run.slot,
      run.workItemId,
      run.outcome,
      run.detail ?? null,
      run.reply ? JSON.stringify(run.reply) : null,
    ],
  );
  return rowCount === 1;
}

/** Moves a schedule on to its next slot; none left: finished. */
export async function advanceSchedule(db: Queryable, id: string, next: Date | undefined): Promise<void> {
  await db.query(
    `UPDATE countersign.schedules
        SET next_run_at = $2, status = CASE WHEN $2::timestamptz IS NULL THEN 'finished' ELSE status END,
            updated_at = now()
      WHERE id = $1`,
    [id, next ?? null],
  );
}

/** Runs whose work item has not come to rest yet, oldest first. */
export async function unsettledRuns(db: Queryable, limit: number): Promise<RunRow[]> {
  const { rows } = await db.query(
    `SELECT * FROM countersign.schedule_runs WHERE outcome = 'running' ORDER BY enqueued_at LIMIT $1`,
    [limit],
  );
  return rows.map((r) => RunRow.parse(r));
}

/** A run's outcome (and the link to where it answered), once; false when it was settled already. */
export async function settleRun(
  db: Queryable,
  run: Pick<RunRow, 'schedule_id' | 'slot'>,
  outcome: Exclude<RunOutcome, 'running'>,
  detail: string | undefined,
  link?: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE countersign.schedule_runs SET outcome = $3, detail = $4, link = $5, finished_at = now()
      WHERE schedule_id = $1 AND slot = $2 AND outcome = 'running'`,
    [run.schedule_id, run.slot, outcome, detail ?? null, link ?? null],
  );
  return rowCount === 1;
}

/** Counts a failed run (or resets the count after one that worked); the count after it. */
export async function countFailure(db: Queryable, id: string, failed: boolean): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `UPDATE countersign.schedules
        SET consecutive_failures = CASE WHEN $2 THEN consecutive_failures + 1 ELSE 0 END, updated_at = now()
      WHERE id = $1 RETURNING consecutive_failures AS n`,
    [id, failed],
  );
  return rows[0]?.n ?? 0;
}

/** Pauses an active schedule; undefined when it was not active. */
export async function pauseSchedule(db: Queryable, id: string, reason: string): Promise<ScheduleRow | undefined> {
  const { rows } = await db.query(
    `UPDATE countersign.schedules SET status = 'paused', paused_reason = $2, updated_at = now()
      WHERE id = $1 AND status = 'active' RETURNING *`,
    [id, reason],
  );
  return rows[0] ? ScheduleRow.parse(rows[0]) : undefined;
}

/** Resumes a paused schedule at its next slot; undefined when it was not paused. */
export async function resumeSchedule(db: Queryable, id: string, next: Date): Promise<ScheduleRow | undefined> {
  const { rows } = await db.query(
    `UPDATE countersign.schedules
        SET status = 'active', paused_reason = NULL, consecutive_failures = 0, next_run_at = $2, updated_at = now()
      WHERE id = $1 AND status = 'paused' RETURNING *`,
    [id, next],
  );
  return rows[0] ? ScheduleRow.parse(rows[0]) : undefined;
}

/** Deletes a schedule and its run history; false when there was none. */
export async function deleteSchedule(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM countersign.schedules WHERE id = $1`, [id]);
  return rowCount === 1;
}

export async function findSchedule(db: Queryable, id: string): Promise<ScheduleRow | undefined> {
  const { rows } = await db.query(`SELECT * FROM countersign.schedules WHERE id = $1`, [id]);
  return rows[0] ? ScheduleRow.parse(rows[0]) : undefined;
}

/**
 * Schedules, newest first: a person's own (`ownerKey`), everyone's in one channel (`channel` of
 * `platform`), or, with neither, every one (the shell's list).
 */
export async function listSchedules(
  db: Queryable,
  filter: { ownerKey?: string; platform?: string; channel?: string },
  limit = 100,
): Promise<ScheduleRow[]> {
  const { rows } = await db.query(
    `SELECT * FROM countersign.schedules
      WHERE ($1::text IS NULL OR owner_key = $1)
        AND ($2::text IS NULL OR (place->>'platform' = $2 AND place->>'channel' = $3))
      ORDER BY created_at DESC LIMIT $4`,
    [filter.ownerKey ?? null, filter.platform ?? null, filter.channel ?? null, limit],
  );
  return rows.map((r) => ScheduleRow.parse(r));
}

/** A schedule's newest runs: its history. */
export async function recentRuns(db: Queryable, scheduleId: string, limit = 20): Promise<RunRow[]> {
  const { rows } = await db.query(
    `SELECT * FROM countersign.schedule_runs WHERE schedule_id = $1 ORDER BY slot DESC LIMIT $2`,
    [scheduleId, limit],
  );
  return rows.map((r) => RunRow.parse(r));
}
