import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.ts';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { TurnSpendWithRuns } from '../../src/budgets/external-spend.ts';
import { keyOf } from '../../src/budgets/spend.ts';
import { readPeriods, releaseExpiredReservations } from '../../src/budgets/store.ts';
import type { ReplyButton } from '../../src/core/reply-target.ts';
import type { Budget } from '../../src/policy/index.ts';
import type { RunReservation, RunWorstCase } from '../../src/agent/model-spend.ts';

/** External coding CLI runs under budgets, against real tables: held whole before, settled to their report after. */

const budget = (over: Partial<Budget> = {}): Budget => ({
  name: 'team',
  source: 'policy.yaml:3',
  covers: { kind: 'channel', value: 'test:C1' },
  unit: 'usd',
  limit: 1,
  per: 'day',
  tz: 'UTC',
  warnAt: 0.8,
  allowance: (over.limit ?? 1) / 4,
  ...over,
});

const WORST: RunWorstCase = { usd: 0.4, tokens: 100_000, leaseSeconds: 60 };

let db: TestDatabase;
let pool: Pool;
const log = createLogger('silent');

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.url, log);
  pool = createPool(db.url, 25);
});
afterAll(async () => {
  await pool.end();
  await db.drop();
});

let items = 0;
const offered: ReplyButton[] = [];

function turn(budgets: Budget[], workItem?: number): TurnSpendWithRuns {
  items += 1;
  return new TurnSpendWithRuns({
    pool,
    prices: { models: {} },
    budgets,
    workItemId: `00000000-0000-4000-9000-${String(workItem ?? items).padStart(12, '0')}`,
    requester: { platform: 'test', userId: 'U1' },
    reply: { platform: 'test', channel: 'C1' },
    log,
    notify: async (_text, buttons) => void (buttons && offered.push(...buttons)),
  });
}

async function periodOf(b: Budget) {
  const [period] = await readPeriods(pool, [keyOf(b)]);
  return period!;
}

const held = (r: RunReservation) => {
  if (!r.ok) throw new Error(`refused: ${r.message}`);
  return r;
};

/** The next settle statement sent through the test's pool fails as a dropped connection would; later ones go through. */
function failNextSettle(): void {
  const query = pool.query.bind(pool);
  pool.query = ((...args: Parameters<Pool['query']>) => {
    if ((args[0] as { name?: string }).name === 'cs_budget_settle') {
      pool.query = query;
      return Promise.reject(new Error('Connection terminated unexpectedly'));
    }
    return query(...args);
  }) as Pool['query'];
}

describe('an external run under budgets', () => {
  it('is counted when its settle fails once (a database blip): its hold is not left to be given back', async () => {
    const b = budget({ name: 'run-blip' });
    const run = held(await turn([b]).reserveRun(WORST));
    failNextSettle();
    await run.settle({ usd: 0.3 });
    // Housekeeping (or the work item's next settle) gives back what is still held once its lease ends.
    await pool.query(`UPDATE countersign.budget_reservations SET expires_at = now() WHERE budget = 'run-blip'`);
    await releaseExpiredReservations(pool);
    expect(await periodOf(b)).toMatchObject({ reserved: 0, spent: 0.3 });
  });

  it('holds its worst case in each unit while it runs, then settles at what it reported', async () => {
    const usd = budget({ name: 'run-usd' });
    const tokens = budget({ name: 'run-tokens', unit: 'tokens', limit: 1_000_000 });
    const run = held(await turn([usd, tokens]).reserveRun(WORST));
    expect(await periodOf(usd)).toMatchObject({ reserved: 0.4, spent: 0 });
    expect(await periodOf(tokens)).toMatchObject({ reserved: 100_000, spent: 0 });
    await run.settle({ usd: 0.1234, tokens: 4321 });
    expect(await periodOf(usd)).toMatchObject({ reserved: 0, spent: 0.1234 });
    expect(await periodOf(tokens)).toMatchObject({ reserved: 0, spent: 4321 });
  });

  it('settles at the whole hold when the run reported nothing (stopped, killed, a CLI without costs)', async () => {
    const usd = budget({ name: 'run-unreported' });
    const tokens = budget({ name: 'run-unreported-tokens', unit: 'tokens', limit: 1_000_000 });
    await held(await turn([usd, tokens]).reserveRun(WORST)).settle({});
    expect(await periodOf(usd)).toMatchObject({ reserved: 0, spent: 0.4 });
    expect(await periodOf(tokens)).toMatchObject({ reserved: 0, spent: 100_000 });
    // Dollars reported but no tokens: each unit settles on its own.
    await held(await turn([usd, tokens]).reserveRun(WORST)).settle({ usd: 0.05 });
    expect(await periodOf(usd)).toMatchObject({ spent: 0.45 });
    expect(await periodOf(tokens)).toMatchObject({ spent: 200_000 });
  });

  it('counts a report above the hold as reported: it was spent', async () => {
    const b = budget({ name: 'run-overrun' });
    await held(await turn([b]).reserveRun(WORST)).settle({ usd: 0.7 });
    expect(await periodOf(b)).toMatchObject({ reserved: 0, spent: 0.7 });
  });

  it('refuses a run whose worst case does not fit, naming the budget, what it covers and the reset', async () => {
    const b = budget({ name: 'run-tight', limit: 1 });
    await held(await turn([b]).reserveRun(WORST)).settle({ usd: 0.7 });
    const before = offered.length;
    const refused = await turn([b]).reserveRun(WORST);
    expect(refused.ok).toBe(false);
    const message = (refused as { message: string }).message;
    expect(message).toMatch(/^I did not start the coding agent: the daily budget "run-tight" of the channel test:C1/);
    expect(message).toContain('has $0.30 left ($0.70 of $1.00 used');
    expect(message).toContain('held at $0.40 before it starts (CODING_AGENT_RESERVE_USD)');
    expect(message).toMatch(/It resets at \d{4}-\d\d-\d\d 00:00 UTC/);
    expect(await periodOf(b)).toMatchObject({ reserved: 0, spent: 0.7 });
    const { rows } = await pool.query<{ detail: { budget: string; run: string } }>(
      `SELECT detail FROM countersign.approval_audit WHERE event = 'budget_refused' AND detail->>'budget' = 'run-tight'`,
    );
    expect(rows.map((r) => r.detail.run)).toEqual(['coding agent']);
    // The approvers' button, as under a refused model call.
    expect(offered.length).toBe(before + 1);
  });

  it('lets at most as many concurrent runs start as their holds fit, and never overspends', async () => {
    const b = budget({ name: 'run-concurrent', limit: 1, allowance: 0 });
    const runs = await Promise.all(Array.from({ length: 5 }, () => turn([b]).reserveRun(WORST)));
    expect(runs.filter((r) => r.ok)).toHaveLength(2);
    expect((await periodOf(b)).reserved).toBeCloseTo(0.8, 9);
    await Promise.all(runs.map((r) => (r.ok ? r.settle({ usd: 0.45 }) : undefined)));
    const period = await periodOf(b);
    expect(period.reserved).toBe(0);
    // The limit, plus what the runs reported beyond their holds.
    expect(period.spent).toBeCloseTo(0.9, 9);
    expect(period.spent).toBeLessThanOrEqual(1 + 2 * (0.45 - 0.4));
  });

  it("counts a crashed attempt's hold as spent when the same work item runs again: its CLI may still be running", async () => {
    const b = budget({ name: 'run-replay', limit: 2, allowance: 0 });
    const workItem = 900_001;
    // The first attempt's worker died mid-run: its hold stays, and its CLI (a process group of its own) may run on.
    held(await turn([b], workItem).reserveRun({ ...WORST, usd: 0.8 }));
    const again = held(await turn([b], workItem).reserveRun({ ...WORST, usd: 0.8 }));
    expect((await periodOf(b)).reserved).toBeCloseTo(1.6, 9);
    await again.settle({ usd: 0.3 });
    expect(await periodOf(b)).toMatchObject({ reserved: 0, spent: 1.1 });
  });

  it('refuses the replay of a run whose crashed hold, counted as spent, left too little room', async () => {
    const b = budget({ name: 'run-replay-full', limit: 1, allowance: 0 });
    const workItem = 900_002;
    held(await turn([b], workItem).reserveRun({ ...WORST, usd: 0.8 }));
    const again = await turn([b], workItem).reserveRun({ ...WORST, usd: 0.8 });
    expect(again.ok).toBe(false);
    expect(await periodOf(b)).toMatchObject({ reserved: 0, spent: 0.8 });
  });

  it("counts a dead worker's hold as spent once its lease has run out", async () => {
    const b = budget({ name: 'run-lease' });
    held(await turn([b]).reserveRun({ ...WORST, leaseSeconds: 0 }));
    expect((await periodOf(b)).reserved).toBeCloseTo(0.4, 9);
    expect(await releaseExpiredReservations(pool)).toBeGreaterThanOrEqual(1);
    expect(await periodOf(b)).toMatchObject({ reserved: 0, spent: 0.4 });
  });
});
