import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { runCli } from '../helpers/processes.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'cs-cli-policy-'));
const good = path.join(dir, 'good.yaml');
const bad = path.join(dir, 'bad.yaml');
writeFileSync(
  good,
  'version: 1\nrules:\n  - name: status\n    tool: run_command\n    command: [git, status]\n    outcome: allow\n',
);
writeFileSync(bad, 'version: 1\nrules:\n  - tool: run_command\n    outcome: sometimes\n');

async function cli(args: string[], env: Record<string, string> = {}) {
  const run = runCli(args, { LOG_LEVEL: 'silent', ...env });
  const { code } = await run.exited;
  return { code, out: run.stdout(), err: run.stderr() };
}

describe('countersign policy', () => {
  it('lints a good file and reports every problem of a bad one at file:line', async () => {
    expect(await cli(['policy', 'lint', good])).toMatchObject({ code: 0, out: `${good}: ok\n` });
    const linted = await cli(['policy', 'lint', bad]);
    expect(linted.code).toBe(1);
    expect(linted.out).toContain(`${bad}:4:`);
    expect(linted.out).toMatch(/1 problem/);
  });

  it('checks one call against POLICY_FILE and the built-in rules, naming the rule', async () => {
    const as = ['--as', 'slack:T0OPS0001:U0DEV0001', '--tool', 'run_command'];
    const status = await cli(['policy', 'check', ...as, '--args', '{"command":["git","status"]}'], {
      POLICY_FILE: good,
    });
    expect(status.code).toBe(0);
    expect(status.out).toMatch(/^outcome: allow\nrule: status \(.*good\.yaml:3\)/);
    // Without approvers a high-risk call asks; with them, it needs someone else's signature.
    const alone = await cli(['policy', 'check', ...as, '--args', '{"command":["ls"]}']);
    expect(alone.out).toMatch(/^outcome: ask\nrule: default:exec \(built-in\)/);
    const team = await cli(['policy', 'check', ...as, '--args', '{"command":["ls"]}'], {
      APPROVERS: 'slack:U0SRE0001',
    });
    expect(team.out).toMatch(
      /^outcome: countersign\nrule: default:exec \(built-in\)\nrisk: high\napprovers: slack:U0SRE0001 \(not the requester\)/,
    );
  });

  it('explains a wrong invocation with exit code 2', async () => {
    const run = await cli(['policy', 'check', '--tool', 'x']);
    expect(run.code).toBe(2);
    expect(run.err).toMatch(/needs --as and --tool/);
  });
});

describe('countersign audit', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      script: {
        rules: [
          { match: 'time', rounds: [{ toolCalls: [{ name: 'current_time', args: {} }] }, { text: 'done' }] },
          { rounds: [{ text: 'ok' }] },
        ],
      },
    });
  });
  afterAll(() => h.stop());

  it('exports calls a rule allowed without a card, filtered by tool, outcome and person', async () => {
    await h.settled((await h.say('audit-1', 'time please')).id);
    const run = await cli(['audit', '--since=1h', '--outcome=allowed', '--tool=current_time', '--person=test:U1'], {
      DATABASE_URL: h.db.url,
    });
    expect(run.code, run.err).toBe(0);
    const lines = run.out
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      event: 'allowed',
      actor: { platform: 'test', userId: 'U1' },
      detail: { tool: 'current_time', rule: 'default:read, built-in' },
    });
    expect(new Date(lines[0].at).getTime()).toBeGreaterThan(Date.now() - 3_600_000);
    const nobody = await cli(['audit', '--person=test:U999'], { DATABASE_URL: h.db.url });
    expect(nobody).toMatchObject({ code: 0, out: '' });
  });

  it('refuses a filter it cannot read, saying what it expects', async () => {
    const outcome = await cli(['audit', '--outcome=maybe'], { DATABASE_URL: h.db.url });
    expect(outcome.code).toBe(2);
    expect(outcome.err).toMatch(/--outcome must be one of requested, .*policy_denied/);
    const since = await cli(['audit', '--since=yesterday'], { DATABASE_URL: h.db.url });
    expect(since.code).toBe(2);
    expect(since.err).toMatch(/--since must be an ISO date/);
  });
});
