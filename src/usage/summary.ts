import type { Queryable } from '../db/pool.ts';
import { costOf, priceOf, type PriceTable } from './model-prices.ts';
import { readModelUsage } from '../agent/turn-store.ts';

/** Token counts of one day's usage in one conversation through one provider. */
interface Counts {
  day: string;
  conversation: string;
  provider: string;
  turns: number;
  rounds: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

export interface UsageRow extends Counts {
  models: string;
  /** Estimated dollars as billed, and as the same prompts would cost uncached; undefined when a model has no price. */
  cost: number | undefined;
  uncachedCost: number | undefined;
  /** Models the price table does not know. */
  unpriced: string[];
}

interface ModelRow extends Counts {
  model: string;
}

/** Model usage per day and conversation, newest day first, costs from `prices` (`countersign usage`). */
export async function usageSummary(db: Queryable, days: number, prices: PriceTable): Promise<UsageRow[]> {
  const rows: ModelRow[] = await readModelUsage(db, days);
  const merged = new Map<string, UsageRow>();
  for (const row of rows) {
    const key = `${row.day}\u0000${row.conversation}`;
    const price = priceOf(prices, row.model);
    const cost = price ? costOf(row, price) : undefined;
    const into = merged.get(key);
    if (!into) {
      merged.set(key, {
        day: row.day,
        conversation: row.conversation,
        provider: row.provider,
        models: row.model,
        turns: row.turns,
        rounds: row.rounds,
        inputTokens: row.inputTokens,
        outputTokens: row.outputTokens,
        cacheReadTokens: row.cacheReadTokens,
        cacheWriteTokens: row.cacheWriteTokens,
        cost: cost?.billed,
        uncachedCost: cost?.uncached,
        unpriced: price ? [] : [row.model],
      });
      continue;
    }
    into.provider = [...new Set([...into.provider.split(','), ...row.provider.split(',')])].sort().join(',');
    into.models = [...new Set([...into.models.split(','), row.model])].sort().join(',');
    into.rounds += row.rounds;
    into.inputTokens += row.inputTokens;
    into.outputTokens += row.outputTokens;
    into.cacheReadTokens += row.cacheReadTokens;
    into.cacheWriteTokens += row.cacheWriteTokens;
    into.cost = into.cost === undefined || !cost ? undefined : into.cost + cost.billed;
    into.uncachedCost = into.uncachedCost === undefined || !cost ? undefined : into.uncachedCost + cost.uncached;
    if (!price) into.unpriced.push(row.model);
  }
  const tokens = (r: UsageRow) => r.inputTokens + r.outputTokens + r.cacheReadTokens + r.cacheWriteTokens;
  return [...merged.values()].sort((a, b) => (a.day === b.day ? tokens(b) - tokens(a) : a.day < b.day ? 1 : -1));
}

const dollars = (n: number | undefined) => (n === undefined ? '?' : `$${n.toFixed(n < 1 ? 4 : 2)}`);

type Totals = Pick<
  UsageRow,
  'turns' | 'rounds' | 'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWriteTokens' | 'cost' | 'uncachedCost'
>;

function totalOf(rows: UsageRow[]): Totals {
  const sum = (pick: (r: UsageRow) => number) => rows.reduce((a, r) => a + pick(r), 0);
  const known = (pick: (r: UsageRow) => number | undefined) =>
    rows.some((r) => pick(r) === undefined) ? undefined : sum((r) => pick(r)!);
  return {
    turns: sum((r) => r.turns),
    rounds: sum((r) => r.rounds),
    inputTokens: sum((r) => r.inputTokens),
    outputTokens: sum((r) => r.outputTokens),
    cacheReadTokens: sum((r) => r.cacheReadTokens),
    cacheWriteTokens: sum((r) => r.cacheWriteTokens),
    cost: known((r) => r.cost),
    uncachedCost: known((r) => r.uncachedCost),
  };
}

/**
 * A table per conversation, a total per day and one for the period. Costs are estimates from the
 * price table; `?` marks a figure that includes a model without a price (listed below the table).
 */
export function formatUsage(rows: UsageRow[]): string {
  if (rows.length === 0) return 'No model usage recorded in that period.';
  const header = [
    'day',
    'conversation',
    'provider',
    'turns',
    'rounds',
    'input',
    'output',
    'cache read',
    'cache write',
    'cost',
    'uncached',
  ];
  const cells = (day: string, conversation: string, provider: string, t: Totals) => [
    day,
    conversation,
    provider,
    String(t.turns),
    String(t.rounds),
    String(t.inputTokens),
    String(t.outputTokens),
    String(t.cacheReadTokens),
    String(t.cacheWriteTokens),
    dollars(t.cost),
    dollars(t.uncachedCost),
  ];
  const body: string[][] = [];
  const days = [...new Set(rows.map((r) => r.day))];
  for (const day of days) {
    const ofDay = rows.filter((r) => r.day === day);
    for (const r of ofDay) body.push(cells(r.day, r.conversation, r.provider, r));
    if (days.length > 1) body.push(cells(day, 'day total', '', totalOf(ofDay)));
  }
  body.push(cells('total', '', '', totalOf(rows)));
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  const unpriced = [...new Set(rows.flatMap((r) => r.unpriced))];
  return [
    line(header),
    ...body.map(line),
    ...(unpriced.length
      ? [`No price for ${unpriced.join(', ')}: add it to MODEL_PRICES_FILE to see its cost (docs/costs.md).`]
      : []),
  ].join('\n');
}
