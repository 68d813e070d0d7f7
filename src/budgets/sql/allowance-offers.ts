import type { Queryable } from '../../db/pool.ts';
import type { BudgetUnit } from '../../policy/index.ts';

/** An offer's row with its period's end, as stored. */
export interface RawAllowanceOffer {
  id: string;
  budget: string;
  unit: BudgetUnit;
  period_start: Date;
  period_end: Date;
  tz: string;
  amount: string;
  requester: unknown;
  reply: unknown;
  granted: boolean;
}

/** Records an offer of `amount` more for the period a call was refused in. */
export async function insertAllowanceOffer(
  db: Queryable,
  offer: {
    id: string;
    budget: string;
    unit: BudgetUnit;
    periodStart: Date;
    tz: string;
    amount: number;
    workItemId: string;
    requester: unknown;
    reply: unknown;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO countersign.budget_allowance_offers (id, budget, unit, period_start, tz, amount, work_item_id, requester, reply)
     VALUES ($1, $2, $3, $4, $9, $5, $6, $7, $8)`,
    [
      offer.id,
      offer.budget,
      offer.unit,
      offer.periodStart,
      offer.amount,
      offer.workItemId,
      JSON.stringify(offer.requester),
      JSON.stringify(offer.reply),
      offer.tz,
    ],
  );
}

/** An offer with its period, or undefined when there is none by that id. */
export async function selectAllowanceOffer(db: Queryable, id: string): Promise<RawAllowanceOffer | undefined> {
  const { rows } = await db.query<RawAllowanceOffer>(
    `SELECT o.id, o.budget, o.unit, o.period_start, p.period_end, o.tz, o.amount, o.requester, o.reply,
            o.granted_at IS NOT NULL AS granted
     FROM countersign.budget_allowance_offers o
     JOIN countersign.budget_periods p USING (budget, unit, period_start)
     WHERE o.id = $1`,
    [id],
  );
  return rows[0];
}

/**
 * Grants an offer, once: marks it granted and raises its period's allowance in one statement, only
 * while the period lasts. False when it was granted already or its period is over.
 */
export async function grantAllowanceOffer(db: Queryable, id: string, by: unknown): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH granted AS (
       UPDATE countersign.budget_allowance_offers
       SET granted_by = $2, granted_at = now()
       WHERE id = $1 AND granted_at IS NULL
         AND EXISTS (SELECT 1 FROM countersign.budget_periods p
                     WHERE p.budget = budget_allowance_offers.budget AND p.unit = budget_allowance_offers.unit
                       AND p.period_start = budget_allowance_offers.period_start AND p.period_end > now())
       RETURNING budget, unit, period_start, amount
     )
     UPDATE countersign.budget_periods p SET allowance = p.allowance + g.amount
     FROM granted g
     WHERE p.budget = g.budget AND p.unit = g.unit AND p.period_start = g.period_start`,
    [id, JSON.stringify(by)],
  );
  return (rowCount ?? 0) > 0;
}
