import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.ts';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { TurnSpend, keyOf } from '../../src/budgets/spend.ts';
import { BudgetLeases } from '../../src/budgets/leases.ts';
import {
  readPeriods,
  releaseExpiredReservations,
  releaseReservationsOf,
  spendDeadProcessLeases,
} from '../../src/budgets/store.ts';
import type { PriceTable } from '../../src/usage/model-prices.ts';
import type { Budget } from '../../src/policy/index.ts';
import type { ModelRequest, ModelRound, TokenUsage } from '../../src/agent/model.ts';
import type { SpendReservation } from '../../src/agent/model-spend.ts';

/**
 * Leases (src/budgets/leases.ts): a worker process reserves many calls at once on a roomy budget and
 * lends them out in memory. What must hold as with a reservation per call: no budget is overspent
 * whatever several processes do at once, every settled call is counted exactly, a warning is told
 * once, and a process that dies leaves nothing uncounted.
 */

const PRICES: PriceTable = { models: { 'test-model': { input: 10, output: 100 } } };
// $0.20 of output at most per call, plus its input: a lease of 16 calls holds about $3.2.
const request: ModelRequest = { system: 'x'.repeat(100), messages: [], tools: [], maxTokens: 2000 };

const budget = (over: Partial<Budget>): Budget => ({
  name: 'b',
  source: 'policy.yaml:3',
  covers: { kind: 'everyone', value: '' },
  unit: 'usd',
  limit: 1000,
  per: 'day',
  tz: 'UTC',
  warnAt: 0.8,
  allowance: 1,
  ...over,
});

const round = (usage: Partial<TokenUsage>): ModelRound => ({
  text: 'ok',
  toolCalls: [],
  stopReason: 'end_turn',
  usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, ...usage },
  provider: 'test',
  model: 'test-model',
  fallbacks: [],
});

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

async function liveProcess(id: string): Promise<void> {
  await pool.query(
    `INSERT INTO countersign.worker_processes (id, hostname, pid, role) VALUES ($1, 'test', 1, 'worker')
     ON CONFLICT DO NOTHING`,
    [id],
  );
}

const leasesOf = (processId: string, over: { callsPerLease?: number; lifetimeMs?: number } = {}) =>
  new BudgetLeases({ pool, processId, log, callsPerLease: 16, flushDelayMs: 10, ...over });

let items = 0;
function turn(
  budgets: Budget[],
  leases: BudgetLeases | undefined,
  notices: string[] = [],
  roomWaitMs?: number,
): TurnSpend {
  items += 1;
  return new TurnSpend({
    pool,
    prices: PRICES,
    budgets,
    workItemId: `00000000-0000-4000-8000-${String(items).padStart(12, '0')}`,
    requester: { platform: 'test', userId: 'U1' },
    reply: { platform: 'test', channel: 'C1' },
    log,
    notify: async (text) => {
      notices.push(text);
    },
    ...(leases ? { leases } : {}),
    ...(roomWaitMs !== undefined ? { roomWaitMs } : {}),
  });
}

/** A call that uses every output token it was granted (the worst case), or `usage` when given. */
async function call(spend: TurnSpend, usage?: Partial<TokenUsage>): Promise<SpendReservation> {
  const reserved = await spend.reserve(request, ['test-model']);
  if (reserved.ok)
    await reserved.settle({ round: round(usage ?? { inputTokens: 30, outputTokens: reserved.maxTokens }) });
  return reserved;
}

/** Counts the statements sent through the test's pool until `stop`. */
function countStatements(): { stop(): number } {
  const query = pool.query.bind(pool);
  let n = 0;
  pool.query = ((...args: Parameters<Pool['query']>) => {
    n += 1;
    return query(...args);
  }) as Pool['query'];
  return {
    stop: () => {
      pool.query = query;
      return n;
    },
  };
}

const periodOf = async (b: Budget) => (await readPeriods(pool, [keyOf(b)]))[0]!;
const reservationRows = async (where = 'true') =>
  (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM countersign.budget_reservations WHERE ${where}`))
    .rows[0]!.n;
const costOfCall = (input: number, output: number) => (input * 10 + output * 100) / 1_000_000;

describe('a lease on a roomy budget', () => {
  it('counts every call exactly, in a handful of statements, and gives everything back when it closes', async () => {
    await liveProcess('p-exact');
    const b = budget({ name: 'exact' });
    const leases = leasesOf('p-exact');
    const usages = Array.from({ length: 100 }, (_, i) => ({ inputTokens: 100 + i, outputTokens: 10 + i }));
    // Counted at the pg pool: reserving and settling each call on its own takes two statements a call.
    const statements = countStatements();
    const results: SpendReservation[] = [];
    for (const batch of [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
      results.push(
        ...(await Promise.all(usages.slice(batch * 10, batch * 10 + 10).map((u) => call(turn([b], leases), u)))),
      );
    expect(results.every((r) => r.ok)).toBe(true);
    expect(statements.stop()).toBeLessThan(20);
    expect(await reservationRows(`process_id = 'p-exact'`)).toBeGreaterThanOrEqual(1);
    await leases.close();
    const period = await periodOf(b);
    const expected = usages.reduce((sum, u) => sum + costOfCall(u.inputTokens, u.outputTokens), 0);
    expect(period.spent).toBeCloseTo(expected, 9);
    expect(period.reserved).toBe(0);
    expect(await reservationRows(`process_id = 'p-exact'`)).toBe(0);
  });

  it('writes settled spend soon, while the lease stays open', async () => {
    await liveProcess('p-soon');
    const b = budget({ name: 'soon' });
    const leases = leasesOf('p-soon', { lifetimeMs: 60_000 });
    await call(turn([b], leases), { inputTokens: 1000, outputTokens: 1000 });
    await expect
      .poll(async () => (await periodOf(b)).spent, { timeout: 10_000 })
      .toBeCloseTo(costOfCall(1000, 1000), 9);
    // The lease still holds room for the calls to come; the spend is no longer part of it.
    const period = await periodOf(b);
    expect(period.reserved).toBeGreaterThan(0);
    await leases.close();
    expect((await periodOf(b)).reserved).toBe(0);
  });

  it('gives back its room once its lifetime is over, though no call of its budgets comes again', async () => {
    await liveProcess('p-idle');
    const b = budget({ name: 'idle' });
    const leases = leasesOf('p-idle', { lifetimeMs: 100 });
    await call(turn([b], leases), { inputTokens: 10, outputTokens: 10 });
    // Nobody calls against this budget again (the person went home): the lease must still end.
    await expect.poll(async () => reservationRows(`process_id = 'p-idle'`), { timeout: 10_000 }).toBe(0);
    const period = await periodOf(b);
    expect(period.reserved).toBe(0);
    expect(period.spent).toBeCloseTo(costOfCall(10, 10), 9);
    await leases.close();
  });

  it('lends nothing to calls under a budget the policy changed since the lease was taken', async () => {
    await liveProcess('p-reload');
    const before = budget({ name: 'reloaded', limit: 1000, allowance: 0 });
    const leases = leasesOf('p-reload', { lifetimeMs: 60_000 });
    await call(turn([before], leases), { inputTokens: 10, outputTokens: 10 });
    // The policy file is reloaded: the same budget, now $0.50 a day. Turns begun since count against that.
    const after = { ...before, limit: 0.5 };
    // The lease taken before the reload holds its room for a minute here: these calls do not wait for it.
    await Promise.all(Array.from({ length: 16 }, () => call(turn([after], leases, [], 0))));
    await leases.close();
    expect((await periodOf(after)).spent).toBeLessThanOrEqual(0.5);
  });

  it('is not taken where it alone would be more than a twentieth of what is left: each call reserves on its own', async () => {
    await liveProcess('p-tight');
    // A lease would hold about $3.2; a twentieth of $50 is $2.5.
    const b = budget({ name: 'tight', limit: 50 });
    const leases = leasesOf('p-tight');
    const reserved = await turn([b], leases).reserve(request, ['test-model']);
    expect(reserved.ok).toBe(true);
    expect(await reservationRows(`process_id = 'p-tight'`)).toBe(0);
    expect(await reservationRows(`budget = 'tight' AND work_item_id IS NOT NULL`)).toBe(1);
    if (reserved.ok) await reserved.settle({ round: round({ inputTokens: 1, outputTokens: 1 }) });
    await leases.close();
  });

  it('keeps all the leases on a shared budget within a twentieth of what is left, however many sets of budgets lease', async () => {
    await liveProcess('p-many');
    const everyone = budget({ name: 'shared-everyone', limit: 1000, allowance: 0 });
    const leases = leasesOf('p-many', { lifetimeMs: 60_000 });
    // Thirty people, each with a budget of their own beside everyone's: thirty sets of budgets.
    const running: SpendReservation[] = [];
    for (let person = 0; person < 30; person++) {
      const own = budget({ name: `person-${person}`, covers: { kind: 'person', value: `test:U${person}` } });
      running.push(await turn([own, everyone], leases).reserve(request, ['test-model']));
    }
    expect(running.every((r) => r.ok)).toBe(true);
    const { rows } = await pool.query<{ leased: string; leases: number }>(
      `SELECT coalesce(sum(amount), 0) AS leased, count(*)::int AS leases FROM countersign.budget_reservations
       WHERE budget = 'shared-everyone' AND process_id IS NOT NULL`,
    );
    // A lease holds about $3.2 of it: fifteen fit in $50, the other people's calls reserved on their own.
    expect(Number(rows[0]!.leased)).toBeLessThanOrEqual(50);
    expect(rows[0]!.leases).toBeGreaterThan(10);
    expect(await reservationRows(`budget = 'shared-everyone' AND work_item_id IS NOT NULL`)).toBeGreaterThan(0);
    for (const r of running) if (r.ok) await r.settle({ round: round({ inputTokens: 1, outputTokens: 1 }) });
    await leases.close();
    expect((await periodOf(everyone)).reserved).toBe(0);
  });

  it('never lets three processes spend past the limit, leasing while there is room and reserving each call near it', async () => {
    // 16 calls' worst case is about $3.2: leases while more than $64 is left, single calls after.
    const b = budget({ name: 'three-processes', limit: 100, allowance: 0 });
    const processes = ['p-a', 'p-b', 'p-c'];
    for (const p of processes) await liveProcess(p);
    const leases = processes.map((p) => leasesOf(p, { lifetimeMs: 200 }));
    const results = await Promise.all(
      Array.from({ length: 900 }, (_, i) => call(turn([b], leases[i % leases.length]))),
    );
    await Promise.all(leases.map((l) => l.close()));
    const period = await periodOf(b);
    expect(period.spent).toBeLessThanOrEqual(100);
    // Most of the budget was used, then calls were refused: the limit, not the leases, stopped them.
    expect(period.spent).toBeGreaterThan(95);
    expect(results.some((r) => !r.ok)).toBe(true);
    expect(period.reserved).toBe(0);
    expect(await reservationRows()).toBe(0);
  });

  it('tells the warning once, in the conversation of a call that crossed it', async () => {
    await liveProcess('p-warn');
    const b = budget({ name: 'warned', warnAt: 0.0002 });
    const leases = leasesOf('p-warn');
    const notices: string[] = [];
    for (let i = 0; i < 5; i++) await call(turn([b], leases, notices), { inputTokens: 1000, outputTokens: 1000 });
    await leases.close();
    await expect.poll(() => notices.length, { timeout: 10_000 }).toBe(1);
    expect(notices[0]).toMatch(/warned|used/);
  });

  it('holds a token budget and a USD budget at once, each in its own unit', async () => {
    await liveProcess('p-units');
    const usd = budget({ name: 'units-usd' });
    const tokens = budget({ name: 'units-tokens', unit: 'tokens', limit: 100_000_000 });
    const leases = leasesOf('p-units');
    for (let i = 0; i < 10; i++) await call(turn([usd, tokens], leases), { inputTokens: 100, outputTokens: 50 });
    await leases.close();
    expect((await periodOf(usd)).spent).toBeCloseTo(10 * costOfCall(100, 50), 9);
    expect((await periodOf(tokens)).spent).toBe(10 * 150);
    expect((await periodOf(tokens)).reserved).toBe(0);
  });
});

describe('a lease during a rolling deploy', () => {
  it('is not expired by the housekeeping of a worker of the release before leases', async () => {
    await liveProcess('p-rolling');
    const b = budget({ name: 'rolling' });
    const leases = leasesOf('p-rolling', { lifetimeMs: 60_000 });
    const running = await turn([b], leases).reserve(request, ['test-model']);
    expect(running.ok).toBe(true);
    // That release gave back every reservation whose lease ran out, not knowing a process's lease:
    // what it would take is no longer held, while this process still lends it and writes its spend to it.
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM countersign.budget_reservations WHERE budget = 'rolling' AND expires_at <= now() + interval '1 day'`,
    );
    expect(rows[0]!.n).toBe(0);
    if (running.ok) await running.settle({ round: round({ inputTokens: 1, outputTokens: 1 }) });
    await leases.close();
  });
});

describe('a process that dies with a lease', () => {
  it('has what its lease held counted as spent, never given back, and a live process’s lease left alone', async () => {
    await liveProcess('p-live');
    await liveProcess('p-dying');
    const b = budget({ name: 'dying' });
    const dying = leasesOf('p-dying', { lifetimeMs: 60_000 });
    const live = leasesOf('p-live', { lifetimeMs: 60_000 });
    // A call of the dying process is running (lent, not settled) when it is killed.
    const running = await turn([b], dying).reserve(request, ['test-model']);
    expect(running.ok).toBe(true);
    await call(turn([b], live), { inputTokens: 10, outputTokens: 10 });
    // The live process writes its call's spend a moment later: wait for it, so it is in `before`.
    await expect.poll(async () => (await periodOf(b)).spent, { timeout: 10_000 }).toBeCloseTo(costOfCall(10, 10), 9);
    const before = await periodOf(b);
    const heldByDying = Number(
      (
        await pool.query<{ amount: string }>(
          `SELECT amount FROM countersign.budget_reservations WHERE process_id = 'p-dying'`,
        )
      ).rows[0]!.amount,
    );
    expect(heldByDying).toBeGreaterThan(0);
    // A lease's time limit is its process's life: the sweep of expired reservations leaves it.
    expect(await releaseExpiredReservations(pool)).toBe(0);
    // Its worker-liveness row is removed (declared dead) and housekeeping runs.
    dying.stopped = true;
    await pool.query(`DELETE FROM countersign.worker_processes WHERE id = 'p-dying'`);
    expect(await spendDeadProcessLeases(pool)).toBe(1);
    const after = await periodOf(b);
    expect(after.spent).toBeCloseTo(before.spent + heldByDying, 9);
    expect(after.reserved).toBeCloseTo(before.reserved - heldByDying, 9);
    expect(await reservationRows(`process_id = 'p-live'`)).toBe(1);
    await live.close();
  });

  it('counts nothing twice when a process declared dead writes its settled calls afterwards', async () => {
    await liveProcess('p-fenced');
    const b = budget({ name: 'fenced' });
    const leases = leasesOf('p-fenced', { lifetimeMs: 60_000 });
    const reserved = await turn([b], leases).reserve(request, ['test-model']);
    const held = Number(
      (
        await pool.query<{ amount: string }>(
          `SELECT amount FROM countersign.budget_reservations WHERE process_id = 'p-fenced'`,
        )
      ).rows[0]!.amount,
    );
    await pool.query(`DELETE FROM countersign.worker_processes WHERE id = 'p-fenced'`);
    await spendDeadProcessLeases(pool);
    // The process was only cut off: its call settles and its lease writes it.
    if (reserved.ok) await reserved.settle({ round: round({ inputTokens: 10, outputTokens: 10 }) });
    await leases.close();
    const period = await periodOf(b);
    expect(period.spent).toBeCloseTo(held, 9);
    expect(period.reserved).toBe(0);
  });

  it('is not touched by a replay of one of its work items (that only gives back reservations of its own)', async () => {
    await liveProcess('p-replay');
    const b = budget({ name: 'replay' });
    const leases = leasesOf('p-replay', { lifetimeMs: 60_000 });
    const spend = turn([b], leases);
    await spend.reserve(request, ['test-model']);
    await releaseReservationsOf(pool, `00000000-0000-4000-8000-${String(items).padStart(12, '0')}`);
    expect(await reservationRows(`process_id = 'p-replay'`)).toBe(1);
    await leases.close();
  });
});
