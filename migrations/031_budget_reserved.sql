-- Spend limits (#38): what calls in flight hold of a period is kept on the period row, so that a
-- model call reserves in one statement under the row's lock (check the headroom of every budget
-- that applies, raise `reserved` on all of them, record the reservation) instead of locking the
-- row across a read of `budget_reservations`, an insert and a commit. `budget_reservations` stays:
-- it says which call holds what, so a settle, a replay or housekeeping gives back exactly that.
ALTER TABLE countersign.budget_periods ADD COLUMN reserved numeric NOT NULL DEFAULT 0;

UPDATE countersign.budget_periods p
SET reserved = r.amount
FROM (SELECT budget, unit, period_start, sum(amount) AS amount
      FROM countersign.budget_reservations GROUP BY budget, unit, period_start) r
WHERE p.budget = r.budget AND p.unit = r.unit AND p.period_start = r.period_start;

-- Reservations are now only read by their id or work item (a settle, a replay) and by housekeeping
-- once a minute over a table that holds only calls in flight: the other two indexes were written
-- on every model call and read by nothing.
DROP INDEX countersign.budget_reservations_period;
DROP INDEX countersign.budget_reservations_expiry;
