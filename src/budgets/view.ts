import type { Queryable } from '../db/pool.ts';
import type { Budget } from '../policy/index.ts';
import { keyOf } from './spend.ts';
import { readPeriods, type PeriodRow } from './store.ts';
import { amountOf, coveredBy, resetTime } from './texts.ts';

/** One budget's current period as operators see it (`countersign usage --budgets`, `/countersign budget`). */
interface BudgetUse {
  budget: Budget;
  period: PeriodRow;
}

/** The current period of each budget, in the policy's order (a budget not used yet shows nothing spent). */
export async function budgetUse(db: Queryable, budgets: Budget[]): Promise<BudgetUse[]> {
  if (budgets.length === 0) return [];
  const periods = await readPeriods(db, budgets.map(keyOf));
  return budgets.map((budget) => ({
    budget,
    period: periods.find((p) => p.budget === budget.name && p.unit === budget.unit)!,
  }));
}

/** A table of budgets: what each covers, its limit (with any allowance), spent, reserved, left, reset. */
export function formatBudgetUse(uses: BudgetUse[]): string {
  if (uses.length === 0) return 'No budgets: the policy file has no `budgets:` section (docs/budgets.md).';
  const header = ['budget', 'covers', 'per', 'limit', 'spent', 'reserved', 'left', 'resets'];
  const body = uses.map(({ budget, period }) => {
    const limit = budget.limit + period.allowance;
    const amount = (n: number) => amountOf(budget.unit, n);
    return [
      budget.name,
      coveredBy(budget),
      budget.per,
      period.allowance > 0 ? `${amount(limit)} (incl. ${amount(period.allowance)} allowed)` : amount(limit),
      amount(period.spent),
      amount(period.reserved),
      amount(Math.max(0, limit - period.spent - period.reserved)),
      resetTime(period.periodEnd, budget.tz),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), ...body.map(line)].join('\n');
}

/** The answer to `/countersign budget`: the budgets that apply, as a Markdown code block. */
export async function budgetStatusText(db: Queryable, budgets: Budget[], everyBudget: boolean): Promise<string> {
  if (budgets.length === 0)
    return everyBudget ? 'The policy sets no budgets (docs/budgets.md).' : 'No budget applies to you here.';
  const heading = everyBudget ? 'Every budget of the policy:' : 'The budgets your requests here count against:';
  return `${heading}\n\n\`\`\`\n${formatBudgetUse(await budgetUse(db, budgets))}\n\`\`\``;
}
