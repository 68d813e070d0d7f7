import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setupGit } from './git-fixture.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { runCli, type CliProcess } from '../helpers/processes.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { Priority } from '../../src/core/work-item.ts';
import { recordToolStart } from '../../src/agent/turn-store.ts';
import { mergeExactly } from '../../src/repos/merge.ts';

/** Setup git (test/repos/git-fixture.ts), its output trimmed. */
const git = (cwd: string, ...args: string[]) => setupGit(cwd, ...args).trim();

const script: Script = {
  rules: [
    {
      match: '^add (?<file>\\S+)',
      rounds: [
        { toolCalls: [{ name: 'write_file', args: { path: '{{file}}', content: 'added\n' } }] },
        { text: 'Add {{file}}' },
        // After the merge: slow, so a kill while the merge's result is being answered is likely too.
        { text: 'Result: {{lastToolResult}}', chunkSize: 4, delayMs: 20 },
      ],
    },
  ],
};

const alice = { platform: 'test', userId: 'U1' };
const bob = { platform: 'test', userId: 'U2' };

/**
 * A worker SIGKILLed while it lands an approved change: another worker finishes the MERGE, and the
 * base gets the change exactly once, wherever in the merge the kill fell (a retried merge finds the
 * commit in the base and reports success without a second commit).
 */
describe('a worker killed during a merge', () => {
  let h: Harness;
  let env: Record<string, string>;
  let clone: string;
  const workers: CliProcess[] = [];

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-merge-crash-'));
    clone = path.join(dir, 'clone');
    mkdirSync(clone);
    git(clone, 'init', '-q', '-b', 'main');
    // Many files: the merge (and the checked-out base following it) takes long enough to be killed in.
    for (let i = 0; i < 400; i++) writeFileSync(path.join(clone, `f${i}.txt`), `${i}\n`);
    git(clone, 'add', '.');
    git(clone, 'commit', '-q', '-m', 'first');
    const scriptFile = path.join(dir, 'script.json');
    writeFileSync(scriptFile, JSON.stringify(script));
    const shared = { APPROVERS: 'test:U2', REPOS: `demo=${clone}`, WORKTREES_DIR: path.join(dir, 'worktrees') };
    h = await startHarness({ role: 'ingress', env: shared });
    env = {
      ...shared,
      DATABASE_URL: h.db.url,
      AI_PROVIDER: 'scripted',
      SCRIPTED_MODEL_SCRIPT: scriptFile,
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      WORKER_HEARTBEAT_SECONDS: '1',
      WORKER_DEAD_AFTER_SECONDS: '3',
      WORKER_POLL_INTERVAL_MS: '200',
      AGENT_WORKSPACE_ROOT: path.join(dir, 'workspace'),
    };
  });
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await h.stop();
  });

  async function cardOf(itemId: string) {
    return waitFor(
      async () => {
        const { rows } = await h.app.pool.query<{ nonce: string; calls: string | unknown[] }>(
          `SELECT nonce, calls FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
          [itemId],
        );
        const row = rows[0];
        if (!row) return undefined;
        const calls = (typeof row.calls === 'string' ? JSON.parse(row.calls) : row.calls) as Array<{
          id: string;
          args: Record<string, string>;
        }>;
        return { nonce: row.nonce, call: calls[0]! };
      },
      30_000,
      'a card',
    );
  }

  const newest = async (conversation: string, not: string) =>
    waitFor(
      async () => {
        const { rows } = await h.app.pool.query<{ id: string }>(
          `SELECT id FROM countersign.work_items WHERE conversation_id = $1 ORDER BY seq DESC LIMIT 1`,
          [conversation],
        );
        return rows[0] && rows[0].id !== not ? rows[0].id : undefined;
      },
      30_000,
      'the continuation',
    );

  it('lands the change exactly once and reports it', async () => {
    const first = runCli(['start', '--role=worker'], env);
    workers.push(first);
    const item = await h.say('merge-crash', 'add greeting.txt', {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'demo' },
      reply: { platform: 'console', channel: 'merge-crash' },
    });
    const write = await cardOf(item.id);
    expect((await h.app.approvals.submit(write.nonce, [{ toolCallId: write.call.id, approved: true }], alice)).ok).toBe(
      true,
    );
    const afterWrite = await newest('merge-crash', item.id);
    const change = await cardOf(afterWrite);
    const sha = change.call.args.sha!;
    const before = git(clone, 'rev-parse', 'main');

    expect((await h.app.approvals.submit(change.nonce, [{ toolCallId: change.call.id, approved: true }], bob)).ok).toBe(
      true,
    );
    const merge = await newest('merge-crash', afterWrite);
    // Killed as soon as the merge call is under way (or, if it was quicker, while its result is answered).
    await waitFor(
      async () => {
        const { rowCount } = await h.app.pool.query(
          `SELECT 1 FROM countersign.tool_executions WHERE work_item_id = $1`,
          [merge],
        );
        return rowCount ? true : undefined;
      },
      30_000,
      'the merge to start',
    );
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    // A fresh worker finds the dead one's turn and finishes it.
    workers.push(runCli(['start', '--role=worker'], env));

    const settled = await h.settled(merge, 60_000);
    expect(settled.status).toBe('done');
    expect(settled.result?.text).toContain('Merged');
    expect(git(clone, 'rev-parse', 'main')).toBe(sha);
    // Exactly one commit more than before: the change itself, fast-forwarded once.
    expect(git(clone, 'rev-list', '--count', `${before}..main`)).toBe('1');
  }, 120_000);

  it('finishes a merge the dead worker had already landed, without a second commit', async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    const first = runCli(['start', '--role=worker'], env);
    workers.push(first);
    const item = await h.say('merge-landed', 'add landed.txt', {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'demo' },
      reply: { platform: 'console', channel: 'merge-landed' },
    });
    const write = await cardOf(item.id);
    expect((await h.app.approvals.submit(write.nonce, [{ toolCallId: write.call.id, approved: true }], alice)).ok).toBe(
      true,
    );
    const afterWrite = await newest('merge-landed', item.id);
    const change = await cardOf(afterWrite);
    // No worker while the merge is approved: the test plays the worker that died mid-merge.
    first.child.kill('SIGKILL');
    await first.exited;
    expect((await h.app.approvals.submit(change.nonce, [{ toolCallId: change.call.id, approved: true }], bob)).ok).toBe(
      true,
    );
    const merge = await newest('merge-landed', afterWrite);
    const { branch, sha, base } = change.call.args as { branch: string; sha: string; base: string };
    // The base moved on meanwhile, so landing the change makes a merge commit, which a careless
    // retry would make a second time.
    writeFileSync(path.join(clone, 'f0.txt'), 'changed on main\n');
    git(clone, 'commit', '-q', '-am', 'meanwhile on main');
    await recordToolStart(h.app.pool, merge, change.call.id, 'merge_change', change.call.args);
    const landed = await mergeExactly(clone, base, { branch, sha, message: 'landed by the dead worker' });
    expect(landed).toMatchObject({ outcome: 'merged', fastForward: false });
    const tip = git(clone, 'rev-parse', 'main');

    workers.push(runCli(['start', '--role=worker'], env));
    const settled = await h.settled(merge, 60_000);
    expect(settled.status).toBe('done');
    expect(settled.result?.text).toContain('Merged');
    // The retried merge found the commit in the base: no commit after the one the dead worker made.
    expect(git(clone, 'rev-parse', 'main')).toBe(tip);
  }, 120_000);
});
