import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../../src/agent/providers/scripted.ts';
import type { Requester } from '../../src/core/person.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { vouchForWorkspace } from '../helpers/taint-baseline.ts';

/**
 * The taint read from the files (issue 47, item 1): content a program wrote counts like content a
 * tool wrote. Two programs a rule allows cannot be chained into running a script the first wrote.
 */
const MAKE_SCRIPT = [process.execPath, '-e', "require('fs').writeFileSync('gen.sh', 'echo pwned > pwned.txt\\n')"];
const RUN_SCRIPT = ['sh', 'gen.sh'];

const POLICY = `version: 1
rules:
  - name: make-script
    tool: run_command
    command: ${JSON.stringify(MAKE_SCRIPT)}
    outcome: allow
  - name: run-script
    tool: run_command
    command: ${JSON.stringify(RUN_SCRIPT)}
    outcome: allow
`;

const script: Script = {
  rules: [
    {
      match: '^make script',
      rounds: [
        { toolCalls: [{ name: 'run_command', args: { command: MAKE_SCRIPT } }] },
        { text: 'Made: {{lastToolResult}}' },
      ],
    },
    {
      match: '^run script',
      rounds: [
        { toolCalls: [{ name: 'run_command', args: { command: RUN_SCRIPT } }] },
        { text: 'Ran: {{lastToolResult}}' },
      ],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const approver: Requester = { platform: 'test', userId: 'U2' };

describe('the taint counts what programs write', () => {
  let db: TestDatabase;
  let h: Harness;
  let workspace: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    const policyFile = path.join(mkdtempSync(path.join(tmpdir(), 'cs-taint-policy-')), 'policy.yaml');
    writeFileSync(policyFile, POLICY);
    h = await startHarness({
      db,
      script,
      env: { POLICY_FILE: policyFile, ENABLE_RUN_COMMAND: 'true', APPROVERS: 'test:U2' },
    });
    workspace = h.config.AGENT_WORKSPACE_ROOT;
    await vouchForWorkspace(h.app.pool, workspace);
  });
  afterAll(async () => {
    await h.stop();
    await db.drop();
  });

  const policyOf = async (itemId: string) => {
    const { rows } = await h.app.pool.query<{ nonce: string; calls: string }>(
      `SELECT nonce, calls FROM countersign.approval_envelopes WHERE work_item_id = $1`,
      [itemId],
    );
    const calls = typeof rows[0]?.calls === 'string' ? JSON.parse(rows[0].calls) : rows[0]?.calls;
    return {
      nonce: rows[0]?.nonce,
      call: calls?.[0] as { id: string; policy: { rule: { name: string }; why?: string } },
    };
  };

  it('does not run, on an allow rule, a script that another allowed program wrote; a countersignature runs it', async () => {
    const made = await h.say('taint-b-1', 'make script');
    expect((await h.settled(made.id)).status).toBe('done');
    expect(existsSync(path.join(workspace, 'gen.sh'))).toBe(true);

    const run = await h.say('taint-b-2', 'run script');
    expect((await h.settled(run.id)).status).toBe('awaiting_approval');
    expect(existsSync(path.join(workspace, 'pwned.txt'))).toBe(false);
    const { nonce, call } = await policyOf(run.id);
    expect(call.policy.rule.name).toBe('default:tainted-workspace');
    expect(call.policy.why).toBe('files changed since the last countersigned run: gen.sh');

    // The second person's signature runs it, and what the run left becomes the baseline.
    const signed = await h.app.approvals.submit(nonce!, [{ toolCallId: call.id, approved: true }], approver);
    expect(signed.ok).toBe(true);
    await expect.poll(() => existsSync(path.join(workspace, 'pwned.txt')), { timeout: 20_000 }).toBe(true);
    await expect
      .poll(
        async () =>
          (
            await h.app.pool.query(
              `SELECT reason FROM countersign.workspace_baselines WHERE workspace = 'agent-workspace'`,
            )
          ).rows[0]?.reason,
        {
          timeout: 20_000,
        },
      )
      .toMatch(/^countersigned run /);
    const again = await h.say('taint-b-3', 'run script');
    expect((await h.settled(again.id)).status).toBe('done');
  });

  it('counts a file deleted since the baseline as a change, named as deleted', async () => {
    await vouchForWorkspace(h.app.pool, workspace);
    writeFileSync(path.join(workspace, 'kept.txt'), 'kept\n');
    await vouchForWorkspace(h.app.pool, workspace);
    rmSync(path.join(workspace, 'kept.txt'));
    const run = await h.say('taint-b-4', 'run script');
    expect((await h.settled(run.id)).status).toBe('awaiting_approval');
    const { call } = await policyOf(run.id);
    expect(call.policy.why).toBe('files changed since the last countersigned run: kept.txt (deleted)');
  });
});
