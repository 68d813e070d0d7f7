import type { Queryable } from '../../db/pool.ts';
import type { BudgetKey, RawPeriod } from './shapes.ts';
import { CURRENT_PERIODS } from './fragments.ts';
import { keyParams } from './open-periods.ts';

/** The budgets' current periods without locking them (operators' views); a budget not used yet has none. */
export async function selectPeriods(db: Queryable, keys: BudgetKey[]): Promise<RawPeriod[]> {
  const { rows } = await db.query<RawPeriod>(
    `WITH ${CURRENT_PERIODS}
     SELECT c.budget, c.unit, c.period_start, c.period_end,
            coalesce(p.spent, 0) AS spent, coalesce(p.allowance, 0) AS allowance,
            coalesce(p.reserved, 0) AS reserved, coalesce(p.warned_at IS NOT NULL, false) AS warned
     FROM current_periods c
     LEFT JOIN countersign.budget_periods p USING (budget, unit, period_start)
     ORDER BY c.budget, c.unit`,
    keyParams(keys),
  );
  return rows;
}
