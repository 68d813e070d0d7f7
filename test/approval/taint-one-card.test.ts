import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../../src/agent/providers/scripted.ts';
import type { Requester } from '../../src/core/person.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { vouchForWorkspace } from '../helpers/taint-baseline.ts';

/**
 * The taint across the calls of one card: a round that asks to write a script and to run it parks
 * both on one card. Every call of a card is re-decided when it is approved, before any of them runs,
 * so the run was decided on the workspace without the script — and the requester's own clicks ran a
 * program over content nobody else vouched for.
 */
const RUN_SCRIPT = ['sh', 'notes.txt'];

const POLICY = `version: 1
rules:
  - { name: write-asks, tool: write_file, outcome: ask }
  - { name: run-asks, tool: run_command, outcome: ask }
`;

const script: Script = {
  rules: [
    {
      match: '^write and run',
      rounds: [
        {
          toolCalls: [
            { name: 'write_file', args: { path: 'notes.txt', content: 'echo pwned > pwned.txt\n' } },
            { name: 'run_command', args: { command: RUN_SCRIPT } },
          ],
        },
        { text: 'Ran: {{lastToolResult}}' },
      ],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const requester: Requester = { platform: 'test', userId: 'U1' };
const approver: Requester = { platform: 'test', userId: 'U2' };

describe('the taint across the calls of one card', () => {
  let db: TestDatabase;
  let h: Harness;
  let workspace: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    const policyFile = path.join(mkdtempSync(path.join(tmpdir(), 'cs-taint-card-')), 'policy.yaml');
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

  async function cardOf(itemId: string) {
    const { rows } = await h.app.pool.query<{ nonce: string; calls: string }>(
      `SELECT nonce, calls FROM countersign.approval_envelopes WHERE work_item_id = $1`,
      [itemId],
    );
    const calls = (typeof rows[0]?.calls === 'string' ? JSON.parse(rows[0].calls) : rows[0]?.calls) as Array<{
      id: string;
      name: string;
    }>;
    return { nonce: rows[0]!.nonce, calls };
  }

  it('does not run, on the requester’s own click, a program after a write the same card holds', async () => {
    const item = await h.say('taint-card-1', 'write and run');
    expect((await h.settled(item.id)).status).toBe('awaiting_approval');
    const { nonce, calls } = await cardOf(item.id);
    expect(calls.map((c) => c.name)).toEqual(['write_file', 'run_command']);

    const approved = await h.app.approvals.submit(
      nonce,
      calls.map((c) => ({ toolCallId: c.id, approved: true })),
      requester,
    );
    expect(approved).toMatchObject({ ok: true });
    await expect
      .poll(
        async () =>
          (
            await h.app.pool.query<{ id: string | null }>(
              `SELECT continuation_work_item AS id FROM countersign.approval_envelopes WHERE nonce = $1`,
              [nonce],
            )
          ).rows[0]?.id,
        { timeout: 20_000 },
      )
      .toBeTruthy();
    const { rows } = await h.app.pool.query<{ id: string }>(
      `SELECT continuation_work_item AS id FROM countersign.approval_envelopes WHERE nonce = $1`,
      [nonce],
    );
    await h.settled(rows[0]!.id);
    // The write ran; the program that would run what it wrote did not, and the model is told why.
    expect(existsSync(path.join(workspace, 'notes.txt'))).toBe(true);
    expect(existsSync(path.join(workspace, 'pwned.txt'))).toBe(false);
    const refused = await h.app.pool.query<{ reason: string }>(
      `SELECT a.reason FROM countersign.approval_audit a JOIN countersign.approval_envelopes e ON e.id = a.envelope_id
        WHERE a.event = 'policy_denied' AND e.nonce = $1`,
      [nonce],
    );
    expect(refused.rows.map((r) => r.reason)).toEqual([
      expect.stringContaining('after write_file of the same request'),
    ]);
  });

  it('runs both when a second person approves the card', async () => {
    const item = await h.say('taint-card-2', 'write and run');
    expect((await h.settled(item.id)).status).toBe('awaiting_approval');
    const { nonce, calls } = await cardOf(item.id);
    const approved = await h.app.approvals.submit(
      nonce,
      calls.map((c) => ({ toolCallId: c.id, approved: true })),
      approver,
    );
    expect(approved).toMatchObject({ ok: true });
    await expect.poll(() => existsSync(path.join(workspace, 'pwned.txt')), { timeout: 20_000 }).toBe(true);
  });
});
