import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { Priority, type WorkItem } from '../../src/core/work-item.ts';
import { openPeriods } from '../../src/budgets/store.ts';

/**
 * `/code` with an external coding CLI under budgets (docs/budgets.md, "External coding agents"),
 * through the app: the fake CLI (test/fakes/coding-cli.mjs) reports what Claude Code's stream-json
 * `result` reports, and writes each task it starts to a file, the proof that it ran.
 */

const HOLD_USD = 0.5;
const REPORTED_USD = 0.55;
// input / output / cache read / cache creation, as the fake's result reports them.
const REPORTED_TOKENS = 100 + 50 + 1000 + 10;

// One budget in each unit for everyone; each test sets what was spent before it, in the rows themselves.
const POLICY = `budgets:
  - name: team-usd
    for: { everyone: true }
    usd: 10
    per: day
    warn_at: 1
  - name: team-tokens
    for: { everyone: true }
    tokens: 1000000
    per: day
    warn_at: 1
rules: []
`;

let h: Harness;
let started: string;
let clone: string;

/** Git as the tests run it: no system or global configuration. */
const GIT_ENV = { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

/** A throw-away clone on `main`, one commit. */
function makeRepo(dir: string): string {
  const clone = path.join(dir, 'clone');
  mkdirSync(clone);
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@localhost', ...args], {
      cwd: clone,
      env: GIT_ENV,
    });
  git('init', '-q', '-b', 'main');
  writeFileSync(path.join(clone, 'README.md'), '# demo\n');
  git('add', '.');
  git('commit', '-q', '-m', 'first');
  return clone;
}

beforeAll(async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cs-code-spend-'));
  writeFileSync(path.join(dir, 'policy.yaml'), POLICY);
  started = path.join(dir, 'started.log');
  clone = makeRepo(dir);
  const cli = path.resolve(import.meta.dirname, '../fakes/coding-cli.mjs');
  h = await startHarness({
    env: {
      POLICY_FILE: path.join(dir, 'policy.yaml'),
      REPOS: `demo=${clone}`,
      WORKTREES_DIR: path.join(dir, 'worktrees'),
      BACKGROUND_CONCURRENCY: '5',
      CODING_AGENT_RESERVE_USD: String(HOLD_USD),
      CODING_AGENT_RESERVE_TOKENS: '200000',
      // Unconfined: the CLI logs its starts outside its worktree (test/sandbox/ tests the sandbox).
      SANDBOX: 'off',
      CODING_AGENT_COMMAND: JSON.stringify([
        process.execPath,
        cli,
        '--mode=stream-json',
        `--started=${started}`,
        `--cost=${REPORTED_USD}`,
        '--usage=100/50/1000/10',
        '--sleep-ms=200',
        '--max-budget-usd={budget_usd}',
        '{task}',
      ]),
    },
  });
});
afterAll(() => h.stop());

const code = (conversation: string, task: string): Promise<WorkItem> =>
  h.say(conversation, task, {
    type: 'CODE',
    priority: Priority.NORMAL,
    payload: { repo: 'demo' },
  });

/** The tasks the CLI started, one per line. */
const startedTasks = (): string[] =>
  existsSync(started) ? readFileSync(started, 'utf8').split('\n').filter(Boolean) : [];

/** Sets what the USD budget's period in progress has spent. */
async function setSpent(budget: string, amount: number): Promise<void> {
  await openPeriods(h.app.pool, [{ budget, unit: 'usd', per: 'day', tz: 'UTC' }]);
  const { rowCount } = await h.app.pool.query(`UPDATE countersign.budget_periods SET spent = $2 WHERE budget = $1`, [
    budget,
    amount,
  ]);
  expect(rowCount).toBe(1);
}

async function spent(budget: string): Promise<{ spent: number; reserved: number }> {
  const { rows } = await h.app.pool.query<{ spent: string; reserved: string }>(
    `SELECT spent, reserved FROM countersign.budget_periods WHERE budget = $1`,
    [budget],
  );
  return { spent: Number(rows[0]?.spent ?? 0), reserved: Number(rows[0]?.reserved ?? 0) };
}

describe('an external coding CLI under budgets', () => {
  it('settles a run at the total_cost_usd and the tokens it reported', async () => {
    const item = await code('cli-settle', 'write settle.txt: counted');
    const settled = await h.settled(item.id, 60_000);
    expect(settled.status).toBe('awaiting_approval');
    expect(startedTasks()).toContain('write settle.txt: counted');
    // "{budget_usd}" in the command became the hold, the CLI's own cap: its answer (the change's
    // commit subject) names the cap it was given.
    const { rows } = await h.app.pool.query<{ calls: string }>(
      `SELECT calls FROM countersign.approval_envelopes WHERE work_item_id = $1`,
      [item.id],
    );
    const [call] = JSON.parse(rows[0]!.calls) as Array<{ args: { sha: string } }>;
    expect(
      execFileSync('git', ['log', '-1', '--format=%s', call!.args.sha], { cwd: clone, env: GIT_ENV, encoding: 'utf8' }),
    ).toBe(`Wrote settle.txt as asked (spend cap $${HOLD_USD}).\n`);
    expect(await spent('team-usd')).toEqual({ spent: REPORTED_USD, reserved: 0 });
    expect(await spent('team-tokens')).toEqual({ spent: REPORTED_TOKENS, reserved: 0 });
  });

  it('refuses a run before the CLI starts when a budget has less room than its hold', async () => {
    await setSpent('team-usd', 9.7);
    const item = await code('cli-tight', 'write tight.txt: never');
    const settled = await h.settled(item.id, 60_000);
    expect(settled.result?.text).toMatch(
      /^I did not start the coding agent: the daily budget "team-usd" of everyone has \$0\.30 left/,
    );
    expect(settled.result?.text).toMatch(/It resets at \d{4}-\d\d-\d\d 00:00 UTC/);
    expect(startedTasks().filter((t) => t.includes('tight.txt'))).toEqual([]);
    expect(await spent('team-usd')).toEqual({ spent: 9.7, reserved: 0 });
  });

  it('settles a stopped run at its whole hold: it reported nothing', async () => {
    await setSpent('team-usd', 0);
    const item = await code('cli-stop', 'hang');
    await waitFor(async () => (startedTasks().includes('hang') ? true : undefined), 60_000, 'the CLI to start');
    expect(await spent('team-usd')).toEqual({ spent: 0, reserved: HOLD_USD });
    expect(await h.app.stopTurn(item.id, { platform: 'test', userId: 'U1' })).toEqual({ ok: true });
    const settled = await h.settled(item.id, 60_000);
    expect(settled.status).toBe('cancelled');
    expect(await spent('team-usd')).toEqual({ spent: HOLD_USD, reserved: 0 });
  });

  it('lets at most 2 of 5 concurrent runs start under a budget that fits 2 holds, and never overspends', async () => {
    // $1.00 left: room for two holds of $0.50.
    await setSpent('team-usd', 9);
    const items = await Promise.all(
      Array.from({ length: 5 }, (_, i) => code(`cli-five-${i}`, `write five-${i}.txt: x`)),
    );
    const settled = await Promise.all(items.map((item) => h.settled(item.id, 90_000)));
    const ran = startedTasks().filter((t) => t.includes('five-'));
    expect(ran).toHaveLength(2);
    const refused = settled.filter((s) => s.result?.text?.startsWith('I did not start the coding agent'));
    expect(refused).toHaveLength(3);
    const { spent: total, reserved } = await spent('team-usd');
    expect(reserved).toBe(0);
    expect(total).toBeCloseTo(9 + 2 * REPORTED_USD, 9);
    // The limit, plus what the runs reported beyond their holds.
    expect(total).toBeLessThanOrEqual(10 + ran.length * (REPORTED_USD - HOLD_USD) + 1e-9);
  });
});
