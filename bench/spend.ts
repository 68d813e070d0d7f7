import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { BudgetLeases } from '../src/budgets/leases.ts';
import { TurnSpend } from '../src/budgets/spend.ts';
import { createLogger } from '../src/log.ts';
import type { Budget } from '../src/policy/index.ts';
import { HttpChatPlatform } from '../test/fakes/chat/http-chat-platform.ts';
import { durable } from './p4-throughput.ts';
import { summarize } from './stats.ts';

/**
 * SPEND (issue #38): what spend limits add. (1) reserve + settle of one model call against two
 * budgets (a channel's and everyone's), one call at a time, p50/p99; (2) P4's durable turns per
 * second with a budget in force (large enough never to refuse) beside the same run without one,
 * alternated so drift on a shared machine falls on both; (3) ten turns at once against a 20,000-token
 * budget: the share of it spent before the first refusal (`concurrentShare`).
 */
export interface SpendResult {
  reserveSettle: { p50: number; p99: number; samples: number };
  /** The same through a process's lease (src/budgets/leases.ts), as calls on a roomy budget go. */
  reserveSettleLeased: { p50: number; p99: number; samples: number };
  p4: { without: number[]; with: number[]; turns: number };
  /** CPU ms per turn (this process + Postgres), per pass: whether a gap is work added or waiting on the row lock. */
  cpu: { without: number[]; with: number[] };
  /** Turns at once against a small budget: the share of it spent when the first call was refused (issue 48). */
  concurrent: ConcurrentSpend;
}

interface ConcurrentSpend {
  turns: number;
  limit: number;
  /** Spent when the first call was refused, as a share of the limit. */
  shareBeforeRefusal: number;
  /** Calls answered before it. */
  answered: number;
}

const BUDGETS: Budget[] = ['channel', 'everyone'].map((kind) => ({
  name: `bench-${kind}`,
  source: 'bench',
  covers: { kind: kind as Budget['covers']['kind'], value: kind === 'channel' ? 'bench:C1' : '' },
  unit: 'usd',
  limit: 1_000_000,
  per: 'day',
  tz: 'UTC',
  warnAt: 1,
  allowance: 1,
}));

async function reserveSettle(
  connectionString: string,
  samples: number,
  leased: boolean,
): Promise<SpendResult['reserveSettle']> {
  const pool = new pg.Pool({ connectionString, max: 4 });
  const log = createLogger('silent');
  const processId = 'bench-process';
  await pool.query(
    `INSERT INTO countersign.worker_processes (id, hostname, pid, role) VALUES ($1, 'bench', 1, 'worker') ON CONFLICT DO NOTHING`,
    [processId],
  );
  const leases = leased ? new BudgetLeases({ pool, processId, log, callsPerLease: 16 }) : undefined;
  try {
    const prices = { models: { script: { input: 3, output: 15, cacheRead: 0.3 } } };
    const request = { system: 'You are a bench.', messages: [], tools: [], maxTokens: 4096 };
    const times: number[] = [];
    for (let i = 0; i < samples + 20; i++) {
      const spend = new TurnSpend({
        pool,
        prices,
        budgets: BUDGETS,
        workItemId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        requester: { platform: 'bench', userId: 'U1' },
        reply: { platform: 'bench', channel: 'C1' },
        log,
        notify: async () => undefined,
        ...(leases ? { leases } : {}),
      });
      const t0 = performance.now();
      const reserved = await spend.reserve(request, ['script']);
      if (!reserved.ok) throw new Error(reserved.message);
      await reserved.settle({
        round: {
          text: 'x',
          toolCalls: [],
          stopReason: 'end_turn',
          usage: { inputTokens: 100, outputTokens: 50, cacheReadTokens: 1000, cacheWriteTokens: 0 },
          provider: 'scripted',
          model: 'script',
          fallbacks: [],
        },
      });
      // The first calls warm the pool's connections and the planner: not counted.
      if (i >= 20) times.push(performance.now() - t0);
    }
    const { p50, p99 } = summarize(times);
    return { p50, p99, samples };
  } finally {
    await leases?.close();
    await pool.end();
  }
}

/**
 * Ten turns at once against a 20,000-token daily budget, each call asking what a mention does (about
 * 4,000 bytes of system prompt and tools, AGENT_MAX_TOKENS 4,096: a worst case near 8,100 tokens) and
 * spending what a short answer does (1,428 tokens, the mean), after 30 ms of "model": each
 * turn calls again until a call anywhere is refused. Reported: what was spent then, over the limit.
 */
async function concurrentShare(connectionString: string): Promise<ConcurrentSpend> {
  const pool = new pg.Pool({ connectionString, max: 12 });
  const log = createLogger('silent');
  const turns = 10;
  const budget: Budget = {
    name: 'bench-ten',
    source: 'bench',
    covers: { kind: 'everyone', value: '' },
    unit: 'tokens',
    limit: 20_000,
    per: 'day',
    tz: 'UTC',
    warnAt: 1,
    allowance: 5_000,
  };
  const request = { system: 'x'.repeat(4000), messages: [], tools: [], maxTokens: 4096 };
  let refusedAt: number | undefined;
  let answered = 0;
  let item = 0;
  const turn = async () => {
    while (refusedAt === undefined) {
      item += 1;
      const spend = new TurnSpend({
        pool,
        prices: { models: { script: { input: 3, output: 15 } } },
        budgets: [budget],
        workItemId: `00000000-0000-4000-9000-${String(item).padStart(12, '0')}`,
        requester: { platform: 'bench', userId: 'U1' },
        reply: { platform: 'bench', channel: 'C1' },
        log,
        notify: async () => undefined,
      });
      const reserved = await spend.reserve(request, ['script']);
      if (!reserved.ok) {
        if (refusedAt === undefined) {
          const { rows } = await pool.query<{ spent: number }>(
            `SELECT spent::float8 AS spent FROM countersign.budget_periods WHERE budget = $1`,
            [budget.name],
          );
          refusedAt = rows[0]?.spent ?? 0;
        }
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 30));
      await reserved.settle({
        round: {
          text: 'x',
          toolCalls: [],
          stopReason: 'end_turn',
          usage: {
            inputTokens: 1000,
            outputTokens: Math.min(428, reserved.maxTokens),
            cacheReadTokens: 0,
            cacheWriteTokens: 0,
          },
          provider: 'scripted',
          model: 'script',
          fallbacks: [],
        },
      });
      answered += 1;
    }
  };
  try {
    await Promise.all(Array.from({ length: turns }, turn));
    return { turns, limit: budget.limit, shareBeforeRefusal: (refusedAt ?? 0) / budget.limit, answered };
  } finally {
    await pool.end();
  }
}

/** A policy whose budgets apply to every bench turn, and a price for the scripted model. */
function budgetFiles(): Record<string, string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'cs-bench-spend-'));
  const policy = path.join(dir, 'policy.yaml');
  const prices = path.join(dir, 'prices.json');
  writeFileSync(
    policy,
    'budgets:\n  - name: bench-everyone\n    for: { everyone: true }\n    usd: 1000000\n    per: day\nrules: []\n',
  );
  writeFileSync(prices, JSON.stringify({ models: { script: { input: 3, output: 15 } } }));
  return { POLICY_FILE: policy, MODEL_PRICES_FILE: prices };
}

export async function benchSpend(
  freshDatabase: (name: string) => Promise<string>,
  samples: number,
  turns: number,
): Promise<SpendResult> {
  const concurrent = await concurrentShare(await freshDatabase('spend_concurrent'));
  const reserve = await reserveSettle(await freshDatabase('spend'), samples, false);
  const reserveLeased = await reserveSettle(await freshDatabase('spend_leased'), samples, true);
  const chat = await new HttpChatPlatform().start();
  const files = budgetFiles();
  const p4: SpendResult['p4'] = { without: [], with: [], turns };
  const cpu: SpendResult['cpu'] = { without: [], with: [] };
  // More passes (BENCH_SPEND_PASSES) tell a real difference from a shared machine's drift.
  const passes = Number(process.env.BENCH_SPEND_PASSES ?? 2);
  try {
    for (let pass = 0; pass < passes; pass++) {
      const without = await durable(await freshDatabase(`spend_off${pass}`), chat.url, turns);
      const withBudget = await durable(await freshDatabase(`spend_on${pass}`), chat.url, turns, files);
      p4.without.push(without.turnsPerSecond);
      p4.with.push(withBudget.turnsPerSecond);
      cpu.without.push(without.withPostgresCpuMsPerTurn);
      cpu.with.push(withBudget.withPostgresCpuMsPerTurn);
    }
  } finally {
    await chat.stop();
  }
  return { reserveSettle: reserve, reserveSettleLeased: reserveLeased, p4, cpu, concurrent };
}
