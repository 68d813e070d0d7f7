/**
 * Pieces of SQL that several budget statements share (CTEs and an expression), so each is written
 * once. None is a statement by itself; the statements beside this file put them together.
 */

/** The budgets' current periods: `now()` is the transaction's, so every statement of one sees the same. */
export const CURRENT_PERIODS = `current_periods AS (
  SELECT b.budget, b.unit,
         date_trunc(b.per, now() AT TIME ZONE b.tz) AT TIME ZONE b.tz AS period_start,
         (date_trunc(b.per, now() AT TIME ZONE b.tz) + ('1 ' || b.per)::interval) AT TIME ZONE b.tz AS period_end
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS b(budget, unit, per, tz)
)`;

/**
 * Statements that change a budget commit without waiting for their WAL flush. The period row stays
 * locked until the commit, so with a synchronous commit every call of every turn would hold the
 * shared `everyone` row for a disk flush and turns would queue on it (measured in docs/budgets.md,
 * Cost, with the trade-off: a crash of Postgres itself can forget the last fraction of a second of
 * reservations and settles). `set_config(…, true)` in the statement applies to its own implicit
 * transaction: one round trip, and the pool's connections keep their setting for everything else.
 */
export const COMMIT = `commit_mode AS (SELECT set_config('synchronous_commit', 'off', true))`;

/**
 * The period row's `warned_at` after adding `spend` to it: set (now) by the first change that takes
 * the period's spend past `warnAt` × (limit + allowance), so each period warns once however many
 * calls or lease writes settle. `p` is the period row being updated; the arguments are SQL expressions.
 */
export const warnedAtAfter = (spend: string, warnAt: string, limit: string) => `CASE
           WHEN p.warned_at IS NULL AND ${warnAt} IS NOT NULL AND ${spend} > 0
                AND p.spent + ${spend} >= ${warnAt} * (${limit} + p.allowance) THEN now()
           ELSE p.warned_at END`;

/**
 * Gives back the reservations `released` (a CTE of deleted reservation rows) holds on their
 * periods, locking the periods in the order a reservation takes them. Only a reservation this
 * statement deleted is given back, so a reservation released twice at once (a settle and
 * housekeeping) is given back once. A hold marked `spent_if_lost` (a coding CLI's run, which can
 * outlive its worker) is counted as spent instead (migration 034).
 */
export const GIVE_BACK = `held AS (
       SELECT budget, unit, period_start, sum(amount) AS amount,
              coalesce(sum(amount) FILTER (WHERE spent_if_lost), 0) AS lost
       FROM released GROUP BY budget, unit, period_start
     ), locked AS (
       SELECT p.budget, p.unit, p.period_start FROM countersign.budget_periods p
       JOIN held USING (budget, unit, period_start)
       ORDER BY p.budget, p.unit
       FOR UPDATE OF p
     ), given_back AS (
       UPDATE countersign.budget_periods p SET reserved = p.reserved - h.amount, spent = p.spent + h.lost
       FROM held h JOIN locked USING (budget, unit, period_start)
       WHERE p.budget = h.budget AND p.unit = h.unit AND p.period_start = h.period_start
     )`;
