import type { Queryable } from '../../db/pool.ts';

/**
 * Counts as spent what the leases of processes that are gone still hold (housekeeping): calls a lease
 * covered may have settled in that process's memory and never been written, so giving the rest back
 * could let a budget be overspent; counting it all can only overcount, by at most the lease.
 */
export async function spendDeadProcessLeases(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ leases: number }>(
    `WITH ended AS (
       DELETE FROM countersign.budget_reservations r
       WHERE r.process_id IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM countersign.worker_processes w WHERE w.id = r.process_id)
       RETURNING r.id, r.budget, r.unit, r.period_start, r.amount
     ), held AS (
       SELECT budget, unit, period_start, sum(amount) AS amount FROM ended GROUP BY budget, unit, period_start
     ), locked AS (
       SELECT p.budget, p.unit, p.period_start FROM countersign.budget_periods p
       JOIN held USING (budget, unit, period_start)
       ORDER BY p.budget, p.unit
       FOR UPDATE OF p
     ), spent AS (
       UPDATE countersign.budget_periods p SET spent = p.spent + h.amount, reserved = p.reserved - h.amount
       FROM held h JOIN locked USING (budget, unit, period_start)
       WHERE p.budget = h.budget AND p.unit = h.unit AND p.period_start = h.period_start
     )
     SELECT count(DISTINCT id)::int AS leases FROM ended`,
  );
  return rows[0]?.leases ?? 0;
}
