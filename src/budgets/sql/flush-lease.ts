import type { Queryable } from '../../db/pool.ts';
import type { LeaseLine, RawSettled, WarnLevel } from './shapes.ts';
import { COMMIT, warnedAtAfter } from './fragments.ts';

/** A lease's write as the statement takes it. */
export interface LeaseFlush {
  id: string;
  lines: LeaseLine[];
  levels: WarnLevel[];
  /** The lease ends: all it holds is given back and its row goes (`giveBack` is then ignored). */
  close: boolean;
}

/**
 * Writes what the calls of a process's lease settled since its last flush, in one statement: their
 * spend moves from the lease's hold to the period's `spent`, and the hold shrinks further by
 * `giveBack` (room the lease hands back). Only while the lease row is there: a lease whose process
 * was declared dead was counted as spent whole (`spendDeadProcessLeases`), so nothing is counted twice.
 * Warns like `settleReservation`. Closing the lease gives back all it still holds and removes it.
 */
export async function flushLeaseRows(db: Queryable, flush: LeaseFlush): Promise<RawSettled[]> {
  const { lines, levels } = flush;
  const { rows } = await db.query<RawSettled>({
    name: 'cs_budget_flush_lease',
    text: `WITH ${COMMIT}, change AS (
       SELECT * FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::numeric[], $6::numeric[])
         AS c(budget, unit, period_start, spend, give_back)
     ), held AS (
       SELECT r.budget, r.unit, r.period_start, c.spend,
              CASE WHEN $11 THEN r.amount ELSE least(r.amount, c.spend + c.give_back) END AS freed
       FROM countersign.budget_reservations r JOIN change c USING (budget, unit, period_start)
       WHERE r.id = $1
       FOR UPDATE OF r
     ), shrunk AS (
       UPDATE countersign.budget_reservations r SET amount = r.amount - h.freed
       FROM held h
       WHERE NOT $11 AND r.id = $1 AND r.budget = h.budget AND r.unit = h.unit
     ), closed AS (
       DELETE FROM countersign.budget_reservations WHERE $11 AND id = $1
     ), levels AS (
       SELECT * FROM unnest($7::text[], $8::text[], $9::numeric[], $10::float8[]) AS l(budget, unit, limit_amount, warn_at)
     ), locked AS (
       SELECT p.budget, p.unit, p.period_start FROM countersign.budget_periods p
       JOIN held USING (budget, unit, period_start)
       ORDER BY p.budget, p.unit
       FOR UPDATE OF p
     )
     UPDATE countersign.budget_periods p
     SET spent = p.spent + h.spend,
         reserved = p.reserved - h.freed,
         warned_at = ${warnedAtAfter('h.spend', 'l.warn_at', 'l.limit_amount')}
     FROM held h JOIN locked USING (budget, unit, period_start) LEFT JOIN levels l USING (budget, unit)
       CROSS JOIN commit_mode
     WHERE p.budget = h.budget AND p.unit = h.unit AND p.period_start = h.period_start
     RETURNING p.budget, p.unit, p.spent, p.allowance, p.period_end,
               coalesce(p.warned_at = now(), false) AS warned_now`,
    values: [
      flush.id,
      lines.map((l) => l.budget),
      lines.map((l) => l.unit),
      lines.map((l) => l.periodStart),
      lines.map((l) => l.spend),
      lines.map((l) => l.giveBack),
      levels.map((l) => l.budget),
      levels.map((l) => l.unit),
      levels.map((l) => l.limit),
      levels.map((l) => l.warnAt),
      flush.close,
    ],
  });
  return rows;
}
