import type { Queryable } from '../../db/pool.ts';
import type { RawSettled, ReservationLine, WarnLevel } from './shapes.ts';
import { COMMIT, warnedAtAfter } from './fragments.ts';

/** A call's settle as the statement takes it: what it cost (null: not known), and where it was reserved. */
export interface SettleRequest {
  id: string;
  workItemId: string | undefined;
  lines: ReservationLine[];
  usd: number | null;
  tokens: number | null;
  levels: WarnLevel[];
}

/**
 * Replaces a reservation by what the call cost, in one statement: `usd` and `tokens`, in each
 * budget's unit (null: not known, and the reserved amount is spent). The spend
 * is added to the periods the call was reserved against (`lines`) whether or not the reservation
 * is still there — its lease may have run out, or a Postgres crash lost it — so every settled call
 * is counted once; what it held is given back only if this statement deleted it. Any other
 * reservation of the same work item goes too: its rounds run one at a time, so one still there is
 * a crashed attempt's (the replay's first settle gives it back). The first settle that takes a
 * budget past its warning level (`warnAt` × (limit + allowance)) marks it warned, in the same
 * statement, so each period warns once however many calls settle.
 */
export async function settleReservationRows(
  db: Queryable,
  settle: SettleRequest,
): Promise<Array<RawSettled & { counted: boolean }>> {
  const { levels, lines } = settle;
  const { rows } = await db.query<RawSettled & { counted: boolean }>({
    name: 'cs_budget_settle',
    text: `WITH ${COMMIT}, released AS (
       DELETE FROM countersign.budget_reservations WHERE id = $1 OR work_item_id = $12
       RETURNING id, budget, unit, period_start, amount, spent_if_lost
     ), given_back AS (
       -- Another hold of the work item is a crashed attempt's; a coding CLI's run it held is counted as spent (GIVE_BACK).
       SELECT budget, unit, period_start, sum(amount) AS amount,
              coalesce(sum(amount) FILTER (WHERE spent_if_lost AND id <> $1), 0) AS lost
       FROM released GROUP BY budget, unit, period_start
     ), levels AS (
       SELECT * FROM unnest($4::text[], $5::text[], $6::numeric[], $7::float8[]) AS l(budget, unit, limit_amount, warn_at)
     ), cost AS (
       SELECT r.budget, r.unit, r.period_start, l.limit_amount, l.warn_at,
              CASE r.unit WHEN 'usd' THEN coalesce($2::numeric, r.amount) ELSE coalesce($3::numeric, r.amount) END AS amount
       FROM unnest($8::text[], $9::text[], $10::timestamptz[], $11::numeric[]) AS r(budget, unit, period_start, amount)
       LEFT JOIN levels l USING (budget, unit)
     ), change AS (
       SELECT budget, unit, period_start, c.limit_amount, c.warn_at, c.amount IS NOT NULL AS counted,
              coalesce(c.amount, 0) + coalesce(g.lost, 0) AS spend, coalesce(g.amount, 0) AS given_back
       FROM cost c FULL JOIN given_back g USING (budget, unit, period_start)
     ), locked AS (
       SELECT p.budget, p.unit, p.period_start FROM countersign.budget_periods p
       JOIN change USING (budget, unit, period_start)
       ORDER BY p.budget, p.unit
       FOR UPDATE OF p
     )
     UPDATE countersign.budget_periods p
     SET spent = p.spent + c.spend,
         reserved = p.reserved - c.given_back,
         warned_at = ${warnedAtAfter('c.spend', 'c.warn_at', 'c.limit_amount')}
     FROM change c JOIN locked USING (budget, unit, period_start) CROSS JOIN commit_mode
     WHERE p.budget = c.budget AND p.unit = c.unit AND p.period_start = c.period_start
     RETURNING p.budget, p.unit, p.spent, p.allowance, p.period_end, c.counted,
               coalesce(p.warned_at = now(), false) AS warned_now`,
    values: [
      settle.id,
      settle.usd,
      settle.tokens,
      levels.map((l) => l.budget),
      levels.map((l) => l.unit),
      levels.map((l) => l.limit),
      levels.map((l) => l.warnAt),
      lines.map((l) => l.budget),
      lines.map((l) => l.unit),
      lines.map((l) => l.periodStart),
      lines.map((l) => l.amount),
      settle.workItemId ?? null,
    ],
  });
  return rows;
}
