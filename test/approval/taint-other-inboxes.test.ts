import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { inboxFolderOf } from '../../src/core/inbox.ts';
import type { Requester } from '../../src/core/person.ts';
import { saveToInbox } from '../../src/files/inbox.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { vouchForWorkspace } from '../helpers/taint-baseline.ts';

/**
 * The deployment's workspace is shared: a file sent in one conversation is in every scan, and a card
 * in another conversation names it among the changed files (or not, past the 40 it names). A
 * countersigned run there cannot read that inbox (its sandbox hides it), so its approver vouched for
 * nothing in it: the file stays one-person content, and its own conversation's programs still need
 * a second signature to run over it.
 */
const ELSEWHERE = 'taint-inbox-elsewhere';
const SENDER = 'taint-inbox-sender';
const RUN_SENT = ['sh', `inbox/${inboxFolderOf(SENDER)}/notes.txt`];
const LOOK = ['ls'];

const POLICY = `version: 1
rules:
  - name: run-sent
    tool: run_command
    command: ${JSON.stringify(RUN_SENT)}
    outcome: allow
  - name: look
    tool: run_command
    command: ${JSON.stringify(LOOK)}
    outcome: allow
`;

const script: Script = {
  rules: [
    {
      match: '^look$',
      rounds: [{ toolCalls: [{ name: 'run_command', args: { command: LOOK } }] }, { text: 'Saw: {{lastToolResult}}' }],
    },
    {
      match: '^run sent$',
      rounds: [
        { toolCalls: [{ name: 'run_command', args: { command: RUN_SENT } }] },
        { text: 'Ran: {{lastToolResult}}' },
      ],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const approver: Requester = { platform: 'test', userId: 'U2' };

describe('the taint of the shared workspace, across conversations', () => {
  let db: TestDatabase;
  let h: Harness;
  let workspace: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    const policyFile = path.join(mkdtempSync(path.join(tmpdir(), 'cs-taint-inbox-')), 'policy.yaml');
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

  it("a countersigned run in one conversation does not vouch for a file sent in another's inbox", async () => {
    await saveToInbox(workspace, SENDER, 'notes.txt', Buffer.from('echo pwned > pwned.txt\n'));

    // Elsewhere, an approver countersigns a harmless program: the workspace holds a file nobody vouched for.
    const look = await h.say(ELSEWHERE, 'look');
    expect((await h.settled(look.id)).status).toBe('awaiting_approval');
    const { rows } = await h.app.pool.query<{ nonce: string; calls: unknown }>(
      `SELECT nonce, calls FROM countersign.approval_envelopes WHERE work_item_id = $1`,
      [look.id],
    );
    const calls = (typeof rows[0]!.calls === 'string' ? JSON.parse(rows[0]!.calls) : rows[0]!.calls) as Array<{
      id: string;
    }>;
    const signed = await h.app.approvals.submit(
      rows[0]!.nonce,
      [{ toolCallId: calls[0]!.id, approved: true }],
      approver,
    );
    expect(signed).toMatchObject({ ok: true });
    await expect
      .poll(
        async () =>
          (
            await h.app.pool.query(
              `SELECT reason FROM countersign.workspace_baselines WHERE workspace = 'agent-workspace'`,
            )
          ).rows[0]?.reason,
        { timeout: 20_000 },
      )
      .toMatch(/^countersigned run /);

    // The sender's own allowed program over what they sent still waits for a second person.
    const run = await h.say(SENDER, 'run sent');
    expect((await h.settled(run.id)).status).toBe('awaiting_approval');
    expect(existsSync(path.join(workspace, 'pwned.txt'))).toBe(false);
  });
});
