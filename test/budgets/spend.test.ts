import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.ts';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { TurnSpend, keyOf } from '../../src/budgets/spend.ts';
import { readPeriods, releaseExpiredReservations } from '../../src/budgets/store.ts';
import { BudgetAllowances } from '../../src/budgets/allowances.ts';
import type { ReplyButton } from '../../src/core/reply-target.ts';
import { costOf, type PriceTable } from '../../src/usage/model-prices.ts';
import type { Budget } from '../../src/policy/index.ts';
import type { ModelRequest, ModelRound, TokenUsage } from '../../src/agent/model.ts';
import type { SpendReservation, SpentOn } from '../../src/agent/model-spend.ts';

const PRICES: PriceTable = {
  models: { 'test-model': { input: 10, output: 100, cacheRead: 1, cacheWrite: 12.5 } },
};

const budget = (over: Partial<Budget> = {}): Budget => ({
  name: 'team',
  source: 'policy.yaml:3',
  covers: { kind: 'channel', value: 'test:C1' },
  unit: 'usd',
  limit: 1,
  per: 'day',
  tz: 'UTC',
  warnAt: 0.8,
  // What the policy compiles when it sets none: a quarter of the limit.
  allowance: (over.limit ?? 1) / 4,
  ...over,
});

const request: ModelRequest = { system: 'x'.repeat(100), messages: [], tools: [], maxTokens: 2000 };

const round = (usage: Partial<TokenUsage>): ModelRound => ({
  text: 'ok',
  toolCalls: [],
  stopReason: 'end_turn',
  usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, ...usage },
  provider: 'test',
  model: 'test-model',
  fallbacks: [],
});

const spentOn = (usage: Partial<TokenUsage>): SpentOn => ({ round: round(usage) });

let db: TestDatabase;
let pool: Pool;
const log = createLogger('silent');

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.url, log);
  // The project's pool: its clients keep an error listener, so dropping the database at the end
  // (which terminates connections pg-pool is still closing) is not an uncaught error.
  pool = createPool(db.url, 25);
});
afterAll(async () => {
  await pool.end();
  await db.drop();
});

let items = 0;
const offered: ReplyButton[] = [];

function turn(
  budgets: Budget[],
  notices: string[] = [],
  leaseSeconds?: number,
  workItem?: number,
  roomWaitMs?: number,
): TurnSpend {
  items += 1;
  return new TurnSpend({
    pool,
    prices: PRICES,
    budgets,
    workItemId: `00000000-0000-4000-8000-${String(workItem ?? items).padStart(12, '0')}`,
    requester: { platform: 'test', userId: 'U1' },
    reply: { platform: 'test', channel: 'C1' },
    log,
    notify: async (text, buttons) => {
      if (buttons) offered.push(...buttons);
      else notices.push(text);
    },
    ...(leaseSeconds !== undefined ? { leaseSeconds } : {}),
    ...(roomWaitMs !== undefined ? { roomWaitMs } : {}),
  });
}

/** A call that uses every output token it was granted: the worst case the budget must hold. */
async function worstCall(spend: TurnSpend): Promise<SpendReservation> {
  const reserved = await spend.reserve(request, ['test-model']);
  if (reserved.ok) await reserved.settle(spentOn({ inputTokens: 30, outputTokens: reserved.maxTokens }));
  return reserved;
}

async function periodOf(b: Budget) {
  const [period] = await readPeriods(pool, [keyOf(b)]);
  return period!;
}

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

describe('reserve before, settle after', () => {
  it('counts a call whose settle failed once, though the turn’s next settle drops its reservation', async () => {
    const b = budget({ name: 'settle-blip', limit: 10 });
    const spend = turn([b]);
    const first = await spend.reserve(request, ['test-model']);
    if (!first.ok) throw new Error(first.message);
    failNextSettle();
    await first.settle(spentOn({ inputTokens: 1000, outputTokens: 1000 }));
    // The turn's next call settles: any reservation of its work item still there goes with it.
    const second = await spend.reserve(request, ['test-model']);
    if (!second.ok) throw new Error(second.message);
    await second.settle(spentOn({ inputTokens: 1000, outputTokens: 1000 }));
    const cost = costOf(
      { inputTokens: 1000, outputTokens: 1000, cacheReadTokens: 0, cacheWriteTokens: 0 },
      PRICES.models['test-model']!,
    ).billed;
    expect(await periodOf(b)).toMatchObject({ reserved: 0 });
    expect((await periodOf(b)).spent).toBeCloseTo(2 * cost, 9);
  });

  it('never lets 20 concurrent calls spend more than a $1.00 budget', async () => {
    const b = budget({ name: 'concurrent' });
    const results = await Promise.all(Array.from({ length: 20 }, () => worstCall(turn([b]))));
    const period = await periodOf(b);
    expect(period.spent).toBeLessThanOrEqual(1);
    expect(period.reserved).toBe(0);
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM countersign.budget_reservations`);
    expect(rows[0].n).toBe(0);
    // Four calls fit whole ($0.20 of output each), the rest shrink to the headroom, then are refused.
    expect(results.filter((r) => r.ok).length).toBeGreaterThanOrEqual(4);
    expect(results.filter((r) => !r.ok).length).toBeGreaterThan(0);
    expect(period.spent).toBeGreaterThan(0.95);
  });

  it('counts each call exactly when many settle at once (written together)', async () => {
    const b = budget({ name: 'settled-together', limit: 10 });
    const held = await Promise.all(Array.from({ length: 12 }, () => turn([b]).reserve(request, ['test-model'])));
    const usages = held.map((_, i) => ({ inputTokens: 100 * (i + 1), outputTokens: 7 * (i + 1) }));
    await Promise.all(
      held.map((reserved, i) =>
        reserved.ok ? reserved.settle(spentOn(usages[i]!)) : Promise.reject(new Error('refused')),
      ),
    );
    const expected = usages.reduce(
      (sum, u) => sum + costOf({ ...u, cacheReadTokens: 0, cacheWriteTokens: 0 }, PRICES.models['test-model']!).billed,
      0,
    );
    const period = await periodOf(b);
    expect(period.spent).toBeCloseTo(expected, 9);
    expect(period.reserved).toBe(0);
  });

  it('holds a budget in tokens as it holds one in dollars', async () => {
    const b = budget({ name: 'tokens', unit: 'tokens', limit: 5000 });
    const results = await Promise.all(Array.from({ length: 10 }, () => worstCall(turn([b]))));
    const period = await periodOf(b);
    expect(period.spent).toBeLessThanOrEqual(5000);
    expect(results.filter((r) => r.ok).length).toBeGreaterThanOrEqual(2);
    expect(results.some((r) => !r.ok)).toBe(true);
  });

  it('counts cached reads at their own price', async () => {
    const b = budget({ name: 'cached', limit: 10 });
    const reserved = await turn([b]).reserve(request, ['test-model']);
    if (!reserved.ok) throw new Error('refused');
    const usage = { inputTokens: 100, outputTokens: 100, cacheReadTokens: 10_000, cacheWriteTokens: 0 };
    await reserved.settle(spentOn(usage));
    const spent = (await periodOf(b)).spent;
    // 100 × $10/M + 100 × $100/M + 10,000 × $1/M (not × $10/M).
    expect(spent).toBeCloseTo(0.001 + 0.01 + 0.01, 9);
    expect(spent).toBeCloseTo(costOf(usage, PRICES.models['test-model']!).billed, 9);
  });

  it('caps the output to the headroom left', async () => {
    const b = budget({ name: 'cap', limit: 0.05 });
    const reserved = await turn([b]).reserve(request, ['test-model']);
    if (!reserved.ok) throw new Error('refused');
    // $0.05 less the input's worst case, at $100 per million output tokens: under 500 tokens.
    expect(reserved.maxTokens).toBeLessThan(500);
    expect(reserved.maxTokens).toBeGreaterThan(480);
    await reserved.settle(spentOn({}));
    expect((await periodOf(b)).reserved).toBe(0);
  });
});

describe('calls at once against a budget', () => {
  // Each call holds its worst case (the input's bound and all 4,096 output tokens, about 8,100
  // tokens) and spends about 1,400: refused at once, 8 of 10 were turned away with 86% left.
  const bigRequest: ModelRequest = { system: 'x'.repeat(4000), messages: [], tools: [], maxTokens: 4096 };
  async function typicalCall(spend: TurnSpend): Promise<SpendReservation> {
    const reserved = await spend.reserve(bigRequest, ['test-model']);
    if (!reserved.ok) return reserved;
    await new Promise((resolve) => setTimeout(resolve, 20));
    await reserved.settle(spentOn({ inputTokens: 1000, outputTokens: Math.min(400, reserved.maxTokens) }));
    return reserved;
  }

  it('answers ten turns at once on a 20,000-token budget, waiting for the holds of calls in flight', async () => {
    const b = budget({ name: 'ten-at-once', unit: 'tokens', limit: 20_000 });
    const results = await Promise.all(Array.from({ length: 10 }, () => typicalCall(turn([b]))));
    expect(results.filter((r) => !r.ok)).toEqual([]);
    const period = await periodOf(b);
    expect(period.spent).toBe(14_000);
    expect(period.reserved).toBe(0);
  });

  it('still never spends past the limit when every call uses its whole worst case', async () => {
    const b = budget({ name: 'worst-at-once', unit: 'tokens', limit: 20_000 });
    const worst = async (spend: TurnSpend) => {
      const reserved = await spend.reserve(bigRequest, ['test-model']);
      if (reserved.ok) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        await reserved.settle(spentOn({ inputTokens: 4100, outputTokens: reserved.maxTokens }));
      }
      return reserved;
    };
    const results = await Promise.all(Array.from({ length: 10 }, () => worst(turn([b]))));
    const period = await periodOf(b);
    expect(period.spent).toBeLessThanOrEqual(20_000);
    expect(results.some((r) => !r.ok)).toBe(true);
    // Refused only once what was spent left no room: not while holds were merely in flight.
    expect(period.spent).toBeGreaterThan(20_000 - 4100 - 256);
  });
});

describe('what people are told', () => {
  it('says a budget smaller than one call is too small, not used up, and offers enough for a call', async () => {
    const b = budget({ name: 'tiny', unit: 'tokens', limit: 300, allowance: 75 });
    const before = offered.length;
    const refused = await turn([b]).reserve(request, ['test-model']);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.message).not.toMatch(/used up/);
    expect(refused.message).toMatch(
      /one call needs about [\d,]+ tokens .*"tiny" of the channel test:C1 is 300 tokens, smaller than that/,
    );
    const button = offered.slice(before).find((o) => o.label.startsWith('Allow'))!;
    // 75 tokens (a quarter of 300) could never let a call through; the offer is what the call lacked.
    const amount = Number(/Allow ([\d,]+) tokens/.exec(button.label)![1]!.replace(/,/g, ''));
    expect(amount).toBeGreaterThan(75);
    const grant = await new BudgetAllowances(pool, (p) => p.userId === 'U2').grant(
      button.value.slice('budget-allow:'.length),
      { platform: 'test', userId: 'U2' },
    );
    expect(grant).toMatchObject({ ok: true });
    expect((await worstCall(turn([b]))).ok).toBe(true);
  });

  it('refuses a call with a message naming the budget, what it covers and when it resets', async () => {
    const b = budget({ name: 'ops-daily', limit: 0.01, tz: 'Europe/Berlin' });
    const refused = await turn([b]).reserve(request, ['test-model']);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.message).toContain('"ops-daily"');
    expect(refused.message).toContain('the channel test:C1');
    expect(refused.message).toMatch(/resets at \d{4}-\d\d-\d\d 00:00 Europe\/Berlin/);
    const { rows } = await pool.query(
      `SELECT detail FROM countersign.approval_audit WHERE event = 'budget_refused' AND detail->>'budget' = 'ops-daily'`,
    );
    expect(rows).toHaveLength(1);
  });

  it('refuses a USD budget for a model without a price rather than guess', async () => {
    const refused = await turn([budget({ name: 'unpriced' })]).reserve(request, ['mystery-model']);
    expect(refused).toMatchObject({ ok: false, message: expect.stringContaining('mystery-model has no price') });
  });

  it('warns once per period, however many calls cross the level at once', async () => {
    const b = budget({ name: 'warned', limit: 1 });
    const notices: string[] = [];
    await Promise.all(Array.from({ length: 8 }, () => worstCall(turn([b], notices))));
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/the channel test:C1 has used \d+% of its \$1\.00 daily budget "warned"/);
    const { rows } = await pool.query(
      `SELECT 1 FROM countersign.approval_audit WHERE event = 'budget_warned' AND detail->>'budget' = 'warned'`,
    );
    expect(rows).toHaveLength(1);
  });
});

describe('reservations that never settle', () => {
  it('are given back by housekeeping once their lease has run out', async () => {
    const b = budget({ name: 'crashed', limit: 0.25 });
    // A worker that dies mid-call: reserved, never settled.
    const held = await turn([b], [], 0).reserve(request, ['test-model']);
    expect(held.ok).toBe(true);
    expect(await releaseExpiredReservations(pool)).toBeGreaterThanOrEqual(1);
    expect((await periodOf(b)).reserved).toBe(0);
    expect((await worstCall(turn([b]))).ok).toBe(true);
  });

  it('are dropped when the same work item reserves again (its replay after a crash)', async () => {
    const b = budget({ name: 'replayed', limit: 0.21 });
    const crashed = turn([b]);
    expect((await crashed.reserve(request, ['test-model'])).ok).toBe(true);
    // Another turn would find the budget held (and, not waiting for a dead worker's hold, is refused);
    // the replay of the crashed one (on another worker, with the same work item) gets it back.
    expect((await turn([b], [], undefined, undefined, 0).reserve(request, ['test-model'])).ok).toBe(false);
    const replay = turn([b], [], undefined, items - 1);
    expect((await replay.reserve(request, ['test-model'])).ok).toBe(true);
  });

  it("are given back by the replay's first settle when the budget still had room", async () => {
    const b = budget({ name: 'replayed-roomy', limit: 1 });
    const crashed = turn([b]);
    expect((await crashed.reserve(request, ['test-model'])).ok).toBe(true);
    const crashedHold = (await periodOf(b)).reserved;
    const replay = turn([b], [], undefined, items);
    const reserved = await replay.reserve(request, ['test-model']);
    if (!reserved.ok) throw new Error('refused');
    expect((await periodOf(b)).reserved).toBeCloseTo(2 * crashedHold, 9);
    await reserved.settle(spentOn({ inputTokens: 30, outputTokens: 10 }));
    const period = await periodOf(b);
    expect(period.reserved).toBe(0);
    expect(period.spent).toBeCloseTo(30 * 10e-6 + 10 * 100e-6, 9);
  });

  it('are given back once when a late settle and housekeeping release the same one at once', async () => {
    const b = budget({ name: 'released-twice', limit: 1 });
    const reserved = await turn([b], [], 0).reserve(request, ['test-model']);
    if (!reserved.ok) throw new Error('refused');
    await Promise.all([releaseExpiredReservations(pool), reserved.settle(spentOn({ outputTokens: 100 }))]);
    const period = await periodOf(b);
    expect(period.reserved).toBe(0);
    // The late settle still counts the call: its lease ran out, its spend did not.
    expect(period.spent).toBeCloseTo(100 * 100e-6, 9);
  });
});

describe('an allowance', () => {
  // Here the approvers are U2 alone (the app asks the policy: test/budgets/turns.test.ts).
  const allowances = {
    grant: (offerId: string, by: { platform: string; userId: string }) =>
      new BudgetAllowances(pool, (person) => person.userId === 'U2').grant(offerId, by),
  };
  const person = (userId: string) => ({ platform: 'test', userId });

  it('is offered under a refusal, and lets exactly that much more through once an approver grants it', async () => {
    const b = budget({ name: 'allowed', limit: 0.4 });
    while ((await worstCall(turn([b]))).ok);
    const button = offered.findLast((o) => o.label.startsWith('Allow'))!;
    expect(button.label).toBe('Allow $0.10 more today');
    const offerId = button.value.slice('budget-allow:'.length);
    const before = (await periodOf(b)).spent;
    expect(await allowances.grant(offerId, person('U2'))).toMatchObject({ ok: true });
    while ((await worstCall(turn([b]))).ok);
    const after = await periodOf(b);
    expect(after.allowance).toBe(0.1);
    expect(after.spent).toBeLessThanOrEqual(0.5);
    expect(after.spent - before).toBeGreaterThan(0.07);
  });

  it('offers the amount the policy sets for the budget', async () => {
    const b = budget({ name: 'allowance-set', limit: 0.4, allowance: 0.3 });
    while ((await worstCall(turn([b]))).ok);
    const button = offered.findLast((o) => o.label.startsWith('Allow'))!;
    expect(button.label).toBe('Allow $0.30 more today');
    expect(await allowances.grant(button.value.slice('budget-allow:'.length), person('U2'))).toMatchObject({
      ok: true,
    });
    expect((await periodOf(b)).allowance).toBe(0.3);
  });

  it('cannot be granted by the requester, by someone who is no approver, or twice', async () => {
    const b = budget({ name: 'countersigned', limit: 0.2 });
    while ((await worstCall(turn([b]))).ok);
    const offerId = offered.findLast((o) => o.label.startsWith('Allow'))!.value.slice('budget-allow:'.length);
    expect(await allowances.grant(offerId, person('U1'))).toMatchObject({
      ok: false,
      reason: expect.stringContaining('an approver other than you'),
    });
    expect(await allowances.grant(offerId, person('U3'))).toMatchObject({
      ok: false,
      reason: expect.stringContaining('Only an approver'),
    });
    expect((await periodOf(b)).allowance).toBe(0);
    expect(await allowances.grant(offerId, person('U2'))).toMatchObject({ ok: true });
    expect(await allowances.grant(offerId, person('U2'))).toMatchObject({ ok: false });
    expect((await periodOf(b)).allowance).toBe(0.05);
    const { rows } = await pool.query(
      `SELECT actor FROM countersign.approval_audit WHERE event = 'budget_allowance' AND detail->>'budget' = 'countersigned'`,
    );
    expect(rows.map((r: { actor: { userId: string } }) => r.actor.userId)).toEqual(['U2']);
  });
});
