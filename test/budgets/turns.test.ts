import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProvider } from '../../src/agent/providers/index.ts';
import { createLogger } from '../../src/log.ts';
import { costOf } from '../../src/usage/model-prices.ts';
import { pressButton, type ButtonSurface } from '../../src/approval/press-button.ts';
import { BudgetAllowances } from '../../src/budgets/index.ts';
import { budgetStatusText } from '../../src/budgets/view.ts';
import { readPeriods, settleReservation } from '../../src/budgets/store.ts';
import { createPool } from '../../src/db/pool.ts';
import { runCli } from '../helpers/processes.ts';
import { startFakeAnthropic } from '../fakes/anthropic-server.ts';
import type { StartedFakeModel } from '../fakes/model-http.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startHarness, testConfig, type Harness } from '../helpers/harness.ts';

/** Whole turns through the app, against the fake Anthropic API, which reports each call's usage. */

const PRICE = { input: 10, output: 100, cacheRead: 1 };

const POLICY = `budgets:
  - name: team-daily
    for: { everyone: true }
    usd: 1.00
    per: day
    warn_at: 0.5
rules: []
`;

let fake: StartedFakeModel;
let db: TestDatabase;
let harness: Harness;
let env: Record<string, string>;

beforeAll(async () => {
  // Every call uses all the output it may (the worst case) and reports input as a tokenizer would.
  fake = await startFakeAnthropic({
    responder: (body) => ({
      kind: 'stream',
      text: ['Done.'],
      delayMs: 2,
      usage: {
        input: Math.ceil(JSON.stringify([body.system, body.messages, body.tools]).length / 4),
        output: Number(body.max_tokens),
      },
    }),
  });
  db = await createTestDatabase();
  const dir = mkdtempSync(path.join(tmpdir(), 'cs-budgets-'));
  writeFileSync(path.join(dir, 'policy.yaml'), POLICY);
  writeFileSync(path.join(dir, 'prices.json'), JSON.stringify({ models: { 'claude-budget': PRICE } }));
  env = {
    AI_PROVIDER: 'anthropic',
    ANTHROPIC_API_KEY: 'sk-ant-fake',
    ANTHROPIC_BASE_URL: fake.url,
    ANTHROPIC_MODEL: 'claude-budget',
    AGENT_MAX_TOKENS: '2000',
    POLICY_FILE: path.join(dir, 'policy.yaml'),
    MODEL_PRICES_FILE: path.join(dir, 'prices.json'),
    WORKER_CONCURRENCY: '10',
    APPROVERS: 'test:U2',
  };
  const provider = createProvider(testConfig(db.url, env), createLogger('silent'));
  harness = await startHarness({ db, env, provider });
});
afterAll(async () => {
  await harness.stop();
  await fake.close();
  await db.drop();
});

/** What the fake API billed, at the budget's prices. */
const billed = () =>
  fake.requests.reduce((sum, r) => {
    const body = r.body;
    const input = Math.ceil(JSON.stringify([body.system, body.messages, body.tools]).length / 4);
    const usage = {
      inputTokens: input,
      outputTokens: Number(body.max_tokens),
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    };
    return sum + costOf(usage, PRICE).billed;
  }, 0);

describe('a $1.00 budget under 20 concurrent turns', () => {
  let texts: string[];
  beforeAll(async () => {
    const items = await Promise.all(Array.from({ length: 20 }, (_, i) => harness.say(`conv-${i}`, 'hello')));
    const settled = await Promise.all(items.map((item) => harness.settled(item.id, 60_000)));
    texts = settled.map((s) => s.result?.text ?? '');
  });

  it('never spends more than the budget', () => {
    expect(fake.requests.length).toBeGreaterThan(0);
    expect(billed()).toBeLessThanOrEqual(1);
  });

  it('ends the refused turns with a message naming the budget, what it covers and when it resets', () => {
    const refused = texts.filter((t) => t.includes('"team-daily"'));
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.length + fake.requests.length).toBe(20);
    expect(refused[0]).toMatch(/daily budget "team-daily" of everyone is used up/);
    expect(refused[0]).toMatch(/resets at \d{4}-\d\d-\d\d 00:00 UTC/);
  });

  it('warns the conversation once, at the warning level', () => {
    const warnings = [...harness.outbound.messages.values()].filter((m) => m.text.startsWith('Heads up'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.text).toMatch(/everyone has used \d+% of its \$1\.00 daily budget "team-daily"/);
  });

  it('counts the spend for operators and refuses a new turn until the period resets', async () => {
    const { rows } = await harness.app.pool.query<{ spent: string }>(
      `SELECT spent FROM countersign.budget_periods WHERE budget = 'team-daily'`,
    );
    expect(Number(rows[0]!.spent)).toBeCloseTo(billed(), 6);
    // Settling frees what a call was reserved beyond its real input, so after the burst a little room
    // may be left: later turns may use it, but the budget still holds, and then a turn is refused
    // without a request.
    for (let i = 0; i < 5; i++) {
      const before = fake.requests.length;
      const late = await harness.say(`conv-late-${i}`, 'one more');
      const text = (await harness.settled(late.id)).result?.text ?? '';
      expect(billed()).toBeLessThanOrEqual(1);
      if (!text.includes('"team-daily"')) continue;
      expect(fake.requests.length).toBe(before);
      return;
    }
    throw new Error('five turns after the budget was spent, none was refused');
  });

  it('lets an approver, not the requester, allow more from the button under the refusal', async () => {
    const offer = [...harness.outbound.messages.values()].findLast((m) => m.buttons?.length);
    const button = offer!.buttons![0]!;
    expect(button.label).toBe('Allow $0.25 more today');
    const { app } = harness;
    const allowances = new BudgetAllowances(app.pool, (person, reply) => app.approvals.isApprover(person, reply));
    const press = async (userId: string) => {
      const told: string[] = [];
      const surface: ButtonSurface = {
        openDenyForm: async () => undefined,
        showFullArguments: async () => undefined,
        tellClicker: async (text) => void told.push(text),
      };
      const deps = {
        approvals: app.approvals,
        recordFeedback: async () => ({ ok: false as const, reason: 'unused' }),
        stopTurn: async () => ({ ok: false as const, reason: 'unused' }),
        allowBudget: (offerId: string, by: { platform: string; userId: string }) => allowances.grant(offerId, by),
      };
      await pressButton(deps, button.value, { platform: 'test', userId }, surface);
      return told.join('\n');
    };
    expect(await press('U1')).toContain('an approver other than you');
    expect(await press('U3')).toContain('Only an approver');
    expect(await press('U2')).toMatch(/^Allowed \$0\.25 more on "team-daily"/);
    const before = fake.requests.length;
    const again = await harness.say('conv-again', 'and now?');
    expect((await harness.settled(again.id)).result?.text).toBe('Done.');
    expect(fake.requests.length).toBe(before + 1);
    expect(billed()).toBeLessThanOrEqual(1.25);
  });
});

describe('operators', () => {
  it('see each budget with its use, reserve and reset in countersign usage --budgets', async () => {
    const run = runCli(['usage', '--budgets'], {
      DATABASE_URL: db.url,
      LOG_LEVEL: 'silent',
      POLICY_FILE: env.POLICY_FILE!,
    });
    expect((await run.exited).code, run.stderr()).toBe(0);
    const [header, row] = run.stdout().trimEnd().split('\n');
    expect(header).toMatch(/^budget\s+covers\s+per\s+limit\s+spent\s+reserved\s+left\s+resets$/);
    expect(row).toMatch(
      /^team-daily\s+everyone\s+day\s+\$1\.25 \(incl\. \$0\.25 allowed\)\s+\$\d\.\d\d\s+\$0\.00\s+\$\d\.\d\d\s+\d{4}-\d\d-\d\d 00:00 UTC$/,
    );
  });

  it('and people see the budgets they count against with /countersign budget', async () => {
    const { app } = harness;
    const person = { platform: 'test', userId: 'U1' };
    const text = await budgetStatusText(
      app.pool,
      app.approvals.budgetsFor(person, { platform: 'test', channel: 'C1' }),
      false,
    );
    expect(text).toMatch(/^The budgets your requests here count against:\n\n```\nbudget /);
    expect(text).toContain('team-daily');
  });

  it('scrape countersign_budget_spent_usd from Postgres, so spend another process settled shows too', async () => {
    const scrape = async () => {
      const text = await (await fetch(`http://127.0.0.1:${harness.app.http.port}/metrics`)).text();
      return Number(/^countersign_budget_spent_usd\{budget="team-daily"\} (\S+)$/m.exec(text)?.[1]);
    };
    const key = { budget: 'team-daily', unit: 'usd' as const, per: 'day' as const, tz: 'UTC' };
    // Another process: its own pool, settling a call of its own (a late settle counts without its reservation).
    const other = createPool(db.url, 2);
    try {
      const [period] = await readPeriods(other, [key]);
      expect(await scrape()).toBeCloseTo(period!.spent, 9);
      const line = { budget: key.budget, unit: key.unit, periodStart: period!.periodStart, amount: 0.5 };
      await settleReservation(other, {
        id: randomUUID(),
        workItemId: undefined,
        lines: [line],
        usd: 0.25,
        tokens: 10,
        levels: [],
      });
      expect(await scrape()).toBeCloseTo(period!.spent + 0.25, 9);
    } finally {
      await other.end();
    }
  });
});
