import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { makeRepo, setupGit } from './git-fixture.ts';
import { Priority } from '../../src/core/work-item.ts';
import { worktreesCli } from '../../src/repos/worktrees-command.ts';
import { pendingMergeCard } from '../../src/approval/store.ts';

/**
 * `countersign worktrees list|remove`, against a running app's database and worktrees: the list
 * names each worktree's repository, branch, conversation, age and state; remove refuses one whose
 * change card waits for a decision unless --force.
 */
describe('countersign worktrees', () => {
  let h: Harness;
  let dir: string;
  let clone: string;
  let settings: { REPOS: string; WORKTREES_DIR: string; REPO_WORKTREES_MAX: number };

  beforeAll(async () => {
    ({ dir, clone } = makeRepo());
    setupGit(clone, 'branch', 'feature');
    settings = { REPOS: `api=${clone}`, WORKTREES_DIR: path.join(dir, 'worktrees'), REPO_WORKTREES_MAX: 20 };
    h = await startHarness({
      script: {
        rules: [
          {
            match: 'add (?<file>\\S+)',
            rounds: [
              { toolCalls: [{ name: 'write_file', args: { path: '{{file}}', content: 'x\n' } }] },
              { text: 'Add {{file}}' },
            ],
          },
          { rounds: [{ text: 'ok' }] },
        ],
      },
      env: { REPOS: settings.REPOS, WORKTREES_DIR: settings.WORKTREES_DIR, APPROVERS: 'test:U2' },
    });
  });
  afterAll(async () => {
    await h.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function run(...args: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
    const out: string[] = [];
    const err: string[] = [];
    const cardWaits = (c: string, b: string) => pendingMergeCard(h.app.pool, c, b);
    const code = await worktreesCli(settings, h.app.pool, cardWaits, args, {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
    });
    return { code, out, err };
  }

  /** A /code turn whose write is approved: its change card then waits. */
  async function changeWaiting(conversation: string): Promise<void> {
    const item = await h.say(conversation, 'add waiting.txt', {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'api' },
    });
    const pending = async (itemId: string) => {
      const { rows } = await h.app.pool.query<{ nonce: string; calls: string }>(
        `SELECT nonce, calls FROM countersign.approval_envelopes
          WHERE work_item_id = $1 AND status = 'pending' AND card_message_id IS NOT NULL`,
        [itemId],
      );
      return rows[0];
    };
    const write = await waitFor(() => pending(item.id), 30_000, 'the write card');
    const [call] = JSON.parse(write.calls) as Array<{ id: string }>;
    expect(
      (
        await h.app.approvals.submit(write.nonce, [{ toolCallId: call!.id, approved: true }], {
          platform: 'test',
          userId: 'U1',
        })
      ).ok,
    ).toBe(true);
    await waitFor(
      async () => {
        const { rows } = await h.app.pool.query(
          `SELECT 1 FROM countersign.approval_envelopes
            WHERE conversation_id = $1 AND status = 'pending' AND calls LIKE '%merge_change%'`,
          [conversation],
        );
        return rows.length > 0 ? true : undefined;
      },
      30_000,
      'the change card',
    );
  }

  it('lists each worktree with its repository, branch, conversation, age and state', async () => {
    await changeWaiting('wt-1');
    const review = await h.say('wt-2', 'Review the branch feature of api.', {
      type: 'REVIEW',
      priority: Priority.HIGH,
      payload: { repo: 'api', branch: 'feature' },
    });
    await h.settled(review.id);
    const listed = await run('list', '--json');
    expect(listed.code).toBe(0);
    const rows = listed.out.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows).toEqual([
      expect.objectContaining({
        repo: 'api',
        conversation: 'wt-1',
        state: 'card pending',
        ageSeconds: expect.any(Number),
      }),
    ]);
    expect(rows[0]!.branch).toMatch(/^countersign\/[0-9a-f]{12}$/);
    const table = await run('list');
    expect(table.out[0]).toMatch(/^REPO\s+BRANCH\s+CONVERSATION\s+AGE\s+STATE$/);
    expect(table.out[1]).toContain('card pending');
  });

  it('refuses to remove a worktree whose change card waits, unless --force', async () => {
    const [row] = (await run('list', '--json')).out.map((l) => JSON.parse(l) as { branch: string; path: string });
    const refused = await run('remove', row!.branch);
    expect(refused.code).toBe(1);
    expect(refused.err.join('\n')).toContain('--force');
    expect(existsSync(row!.path)).toBe(true);
    const forced = await run('remove', row!.branch, '--force');
    expect(forced.code).toBe(0);
    expect(existsSync(row!.path)).toBe(false);
    expect(setupGit(clone, 'branch', '--list', row!.branch)).toBe('');
    expect((await run('list', '--json')).out).toEqual([]);
  });

  it('says how to call it when the words are wrong, and refuses an unknown worktree', async () => {
    expect((await run('lsit')).code).toBe(2);
    expect((await run('list', '--jsonx')).code).toBe(2);
    const unknown = await run('remove', 'countersign/000000000000');
    expect(unknown.code).toBe(1);
    expect(unknown.err.join('\n')).toContain('worktrees list');
  });
});
