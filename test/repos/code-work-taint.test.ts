import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { Priority, type WorkItem } from '../../src/core/work-item.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { shortConversationId } from '../../src/repos/worktrees.ts';
import { makeRepo, setupGit } from './git-fixture.ts';

/**
 * Issue 47, item 1, the repro: in a /code thread an approver approves an innocent write; the
 * requester then sends `notes.test.js` as a file, and nobody clicks anything. At the turn's end the
 * repository's `test: [node, --test]` (allowed by a rule) would find the received file and run it.
 * A received file is outsiders' content on disk: the tests do not run without a countersignature,
 * and the change card says so and names the file.
 */
const POLICY = `version: 1
rules:
  - name: tests
    tool: run_command
    command: [node, --test]
    outcome: allow
`;

const script: Script = {
  rules: [
    {
      match: '^add a greeting',
      rounds: [
        { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hello\n' } }] },
        { text: 'Add a greeting file' },
      ],
    },
    { match: '^here is a note', rounds: [{ text: 'Thanks for the note.' }] },
    { rounds: [{ text: 'ok' }] },
  ],
};

const bob = { platform: 'test', userId: 'U2' }; // the approver; alice (test:U1) asks

interface Envelope {
  nonce: string;
  calls: Array<{ id: string; name: string; args: Record<string, unknown> }>;
}

describe('code work: received files are one-person content (the taint reads the disk)', () => {
  let db: TestDatabase;
  let h: Harness;
  let marks: string;
  let worktreesDir: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    const repo = makeRepo();
    marks = mkdtempSync(path.join(tmpdir(), 'cs-taint-marks-'));
    worktreesDir = path.join(repo.dir, 'worktrees');
    const reposFile = path.join(repo.dir, 'repos.yaml');
    writeFileSync(reposFile, `repos:\n  demo:\n    path: ${repo.clone}\n    test: [node, --test]\n`);
    const policyFile = path.join(repo.dir, 'policy.yaml');
    writeFileSync(policyFile, POLICY);
    h = await startHarness({
      db,
      script,
      env: {
        APPROVERS: 'test:U2',
        REPOS_FILE: reposFile,
        WORKTREES_DIR: worktreesDir,
        POLICY_FILE: policyFile,
        ENABLE_RUN_COMMAND: 'true',
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await db.drop();
  });

  const envelopeOf = (itemId: string): Promise<Envelope> =>
    waitFor(
      async () => {
        const { rows } = await h.app.pool.query<{ nonce: string; calls: string }>(
          `SELECT nonce, calls FROM countersign.approval_envelopes
            WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
          [itemId],
        );
        const row = rows[0];
        return row && { nonce: row.nonce, calls: typeof row.calls === 'string' ? JSON.parse(row.calls) : row.calls };
      },
      30_000,
      'the card',
    );

  const latestItem = async (conversation: string, not: string): Promise<string> =>
    waitFor(
      async () => {
        const { rows } = await h.app.pool.query<{ id: string }>(
          `SELECT id FROM countersign.work_items WHERE conversation_id = $1 ORDER BY seq DESC LIMIT 1`,
          [conversation],
        );
        return rows[0]?.id !== not ? rows[0]?.id : undefined;
      },
      10_000,
      'the continuation',
    );

  it('does not run the allowed test command over a received file, and the change card names it', async () => {
    const conversation = 'taint-repro';
    const first: WorkItem = await h.say(conversation, 'add a greeting', {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'demo' },
    });
    // 1. The approver approves the innocent write: two people, nothing one-person in the worktree.
    const write = await envelopeOf(first.id);
    expect(write.calls[0]?.name).toBe('write_file');
    const ok = await h.app.approvals.submit(write.nonce, [{ toolCallId: write.calls[0]!.id, approved: true }], bob);
    expect(ok.ok).toBe(true);
    const continuation = await latestItem(conversation, first.id);
    expect((await h.settled(continuation)).status).toBe('awaiting_approval');
    const card = await envelopeOf(continuation);
    expect(card.calls[0]?.name).toBe('merge_change');
    expect(String(card.calls[0]?.args.tests)).toMatch(/^`node --test` (passed|FAILED)/);

    // 2. The requester sends notes.test.js in the thread. Nobody clicks anything.
    const mark = path.join(marks, 'ran');
    h.outbound.files.set('F-notes', Buffer.from(`require('fs').writeFileSync(${JSON.stringify(mark)}, 'ran');\n`));
    const note = await h.say(conversation, 'here is a note', {
      input: { prompt: 'here is a note', files: [{ id: 'F-notes', name: 'notes.test.js' }] },
    });
    expect((await h.settled(note.id)).status).toBe('awaiting_approval');

    // 3. At the turn's end the tests did not run: the received file differs from what two people vouched for.
    expect(existsSync(mark)).toBe(false);
    const second = await envelopeOf(note.id);
    const args = second.calls[0]!.args as { tests?: string; notCommitted?: string[] };
    expect(args.tests).toMatch(/^`node --test` not run: the policy needs a second person to countersign it/);
    expect(args.tests).toMatch(
      /files changed since the last countersigned run: inbox\/taint-repro-[0-9a-f]{8}\/notes\.test\.js/,
    );
    expect(args.notCommitted).toEqual([expect.stringMatching(/^inbox\/taint-repro-[0-9a-f]{8}\/notes\.test\.js$/)]);
    // The card's text says both.
    const text = [...h.outbound.messages.values()].map((m) => m.text).join('\n');
    expect(text).toMatch(
      /In the worktree but not in this commit \(not merged\): inbox\/taint-repro-[0-9a-f]{8}\/notes\.test\.js/,
    );
    expect(text).toContain('`node --test` not run');
  });

  it('compares a worktree with its clean checkout by content, not through the index a program could blind', async () => {
    const conversation = 'taint-index';
    const item = await h.say(conversation, 'here is a note', {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'demo' },
    });
    expect((await h.settled(item.id)).status).toBe('done');
    const worktree = path.join(worktreesDir, 'demo', shortConversationId(conversation));
    const tests = { id: 'tests', name: 'run_command', args: { command: ['node', '--test'] } };
    // Nothing differs from the checkout yet: the rule lets the tests run.
    expect((await h.app.approvals.rule(item, tests)).outcome).toBe('allow');
    // A program (the coding CLI, say) edits a tracked file and tells git's index to look away.
    writeFileSync(path.join(worktree, 'README.md'), 'require("fs").writeFileSync("pwned", "")\n');
    setupGit(worktree, 'update-index', '--assume-unchanged', 'README.md');
    expect(setupGit(worktree, 'status', '--porcelain')).toBe('');
    const ruling = await h.app.approvals.rule(item, tests);
    expect(ruling).toMatchObject({ outcome: 'countersign', rule: 'default:tainted-workspace, built-in' });
    expect(ruling.message).toBe('files changed since the last countersigned run: README.md');
  });
});
