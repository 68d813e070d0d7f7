import type { Queryable } from '../../db/pool.ts';
import type { RawPeriod, ReservationAsk } from './shapes.ts';
import { COMMIT } from './fragments.ts';

/** A call's reservation as the statement takes it (see `reserveCall` in ../store.ts). */
export interface ReservationRequest {
  id: string;
  workItemId: string | undefined;
  asks: ReservationAsk[];
  leaseSeconds: number;
  /** A process's lease (leases.ts): it holds while that process lives, not for `leaseSeconds`. */
  processId?: string;
  /** Counted as spent, not given back, if it is found lost (a coding CLI's run can outlive its worker). */
  spentIfLost?: boolean;
}

/**
 * Reserves a call in one statement: locks the budgets' current periods (in one order, so calls
 * sharing budgets never wait for each other in a circle), and only if every one exists and has room
 * for its amount (`limit + allowance − spent − reserved`), raises their `reserved` and records the
 * reservation for `leaseSeconds`. A statement that waited for a lock reads the rows as the holder
 * left them (READ COMMITTED re-reads a locked row), so concurrent calls each see the others' holds.
 * One row per locked period as it was before this call (all null but `held` when none was), each with
 * the verdict.
 */
export async function reserveCallRows(
  db: Queryable,
  call: ReservationRequest,
): Promise<Array<RawPeriod & { held: boolean }>> {
  const { asks } = call;
  const { rows } = await db.query<RawPeriod & { held: boolean }>({
    name: 'cs_budget_reserve',
    text: `WITH ${COMMIT}, ask AS (
       SELECT a.budget, a.unit, a.amount, a.limit_amount, a.leased_share,
              date_trunc(a.per, now() AT TIME ZONE a.tz) AT TIME ZONE a.tz AS period_start
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::numeric[], $6::numeric[], $10::numeric[])
         AS a(budget, unit, per, tz, amount, limit_amount, leased_share)
     ), locked AS (
       SELECT p.budget, p.unit, p.period_start, p.period_end, p.spent, p.allowance, p.reserved,
              p.warned_at IS NOT NULL AS warned
       FROM countersign.budget_periods p
       JOIN ask USING (budget, unit, period_start)
       ORDER BY p.budget, p.unit
       FOR UPDATE OF p
     ), verdict AS (
       SELECT count(*) = cardinality($1::text[])
              AND coalesce(bool_and(a.limit_amount + l.allowance - l.spent - l.reserved >= a.amount
                                    AND (a.leased_share IS NULL
                                         OR leases.amount + a.amount
                                            <= a.leased_share * (a.limit_amount + l.allowance - l.spent))), true) AS held
       FROM locked l JOIN ask a USING (budget, unit)
       -- Read only for a lease. Leases taken by statements that committed while this one waited for
       -- the lock are not seen: the share can be passed by a lease or two at once, the limit never.
       LEFT JOIN LATERAL (
         SELECT coalesce(sum(r.amount), 0) AS amount FROM countersign.budget_reservations r
         WHERE a.leased_share IS NOT NULL AND r.process_id IS NOT NULL
           AND r.budget = a.budget AND r.unit = a.unit AND r.period_start = a.period_start
       ) leases ON true
     ), raised AS (
       UPDATE countersign.budget_periods p SET reserved = p.reserved + a.amount
       FROM ask a, verdict v
       WHERE v.held AND p.budget = a.budget AND p.unit = a.unit AND p.period_start = a.period_start
     ), recorded AS (
       INSERT INTO countersign.budget_reservations
         (id, budget, unit, period_start, amount, work_item_id, expires_at, process_id, spent_if_lost)
       SELECT $7, a.budget, a.unit, a.period_start, a.amount, $8, now() + make_interval(secs => $9), $11, $12
       FROM ask a, verdict v
       WHERE v.held
     )
     SELECT l.*, v.held FROM verdict v CROSS JOIN commit_mode LEFT JOIN locked l ON true`,
    values: [
      asks.map((a) => a.budget),
      asks.map((a) => a.unit),
      asks.map((a) => a.per),
      asks.map((a) => a.tz),
      asks.map((a) => a.amount),
      asks.map((a) => a.limit),
      call.id,
      call.workItemId ?? null,
      call.leaseSeconds,
      asks.map((a) => a.leasedShare ?? null),
      call.processId ?? null,
      call.spentIfLost ?? false,
    ],
  });
  return rows;
}
