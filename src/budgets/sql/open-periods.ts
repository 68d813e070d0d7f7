import type { Queryable } from '../../db/pool.ts';
import type { BudgetKey } from './shapes.ts';
import { CURRENT_PERIODS } from './fragments.ts';

/** The arguments of `CURRENT_PERIODS`: the budgets' names, units, period lengths and time zones. */
export const keyParams = (keys: BudgetKey[]) => [
  keys.map((k) => k.budget),
  keys.map((k) => k.unit),
  keys.map((k) => k.per),
  keys.map((k) => k.tz),
];

/** Creates the rows of the budgets' current periods that do not exist yet. */
export async function openPeriods(db: Queryable, keys: BudgetKey[]): Promise<void> {
  await db.query(
    `WITH ${CURRENT_PERIODS}
     INSERT INTO countersign.budget_periods (budget, unit, period_start, period_end)
     SELECT budget, unit, period_start, period_end FROM current_periods
     ON CONFLICT DO NOTHING`,
    keyParams(keys),
  );
}
