import type { Queryable } from '../../db/pool.ts';

/** Each USD budget's settled dollars in its period now in progress (the metric, read at scrape). */
export async function currentSpendUsd(db: Queryable): Promise<Array<{ budget: string; usd: number }>> {
  const { rows } = await db.query<{ budget: string; spent: string }>(
    `SELECT budget, spent FROM countersign.budget_periods
     WHERE unit = 'usd' AND period_start <= now() AND period_end > now()
     ORDER BY budget`,
  );
  return rows.map((r) => ({ budget: r.budget, usd: Number(r.spent) }));
}
