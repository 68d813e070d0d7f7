import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setupGit } from './git-fixture.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { ScriptedProvider, type Script } from '../../src/agent/providers/scripted.ts';
import type { ModelProvider, ModelRequest } from '../../src/agent/model.ts';
import { Priority, type WorkItem } from '../../src/core/work-item.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { shortConversationId } from '../../src/repos/worktrees.ts';

/** Setup git (test/repos/git-fixture.ts), its output trimmed. */
const sh = (cwd: string, ...args: string[]) => setupGit(cwd, ...args).trim();

/** Git as a person's own commands in the hostile clone: none of its programs run. */
const safe = (cwd: string, ...args: string[]) =>
  sh(
    cwd,
    ...['core.hooksPath=/dev/null', 'core.fsmonitor=false', 'filter.evil.clean=cat', 'filter.evil.smudge=cat'].flatMap(
      (c) => ['-c', c],
    ),
    ...args,
  );

/** A throw-away clone on `main`, one commit; `hostile` adds config and hooks that would leave marks. */
function makeRepo(hostile = false): { dir: string; clone: string; marks: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'cs-code-'));
  const clone = path.join(dir, 'clone');
  const marks = path.join(dir, 'marks');
  mkdirSync(clone);
  mkdirSync(marks);
  sh(clone, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(clone, 'README.md'), '# demo\n');
  writeFileSync(path.join(clone, 'app.txt'), 'one\ntwo\nthree\n');
  sh(clone, 'add', '.');
  sh(clone, 'commit', '-q', '-m', 'first');
  if (hostile) {
    // Set last, after the setup's own commits: from here on only the app's git runs in this clone.
    const mark = (name: string) => `#!/bin/sh\ntouch ${path.join(marks, name)}\n`;
    writeFileSync(path.join(clone, '.gitattributes'), '*.txt filter=evil\n');
    sh(clone, 'add', '.gitattributes');
    sh(clone, 'commit', '-q', '-m', 'attributes');
    const hooks = path.join(clone, '.git', 'hooks');
    for (const hook of [
      'pre-commit',
      'post-commit',
      'commit-msg',
      'post-checkout',
      'reference-transaction',
      'post-merge',
    ]) {
      writeFileSync(path.join(hooks, hook), mark(hook), { mode: 0o755 });
    }
    writeFileSync(path.join(dir, 'fsmonitor.sh'), mark('fsmonitor'), { mode: 0o755 });
    writeFileSync(path.join(dir, 'filter.sh'), mark('filter') + 'cat\n', { mode: 0o755 });
    sh(clone, 'config', 'core.fsmonitor', path.join(dir, 'fsmonitor.sh'));
    sh(clone, 'config', 'filter.evil.clean', path.join(dir, 'filter.sh'));
    sh(clone, 'config', 'filter.evil.smudge', path.join(dir, 'filter.sh'));
  }
  return { dir, clone, marks };
}

/** A scripted model that also keeps what each round was offered and told. */
class RecordingProvider implements ModelProvider {
  readonly name = 'scripted';
  readonly model = 'script';
  readonly requests: ModelRequest[] = [];
  readonly #inner: ScriptedProvider;
  constructor(script: Script) {
    this.#inner = new ScriptedProvider(script);
  }
  streamRound(...args: Parameters<ModelProvider['streamRound']>) {
    this.requests.push(args[0]);
    return this.#inner.streamRound(...args);
  }
}

const script: Script = {
  rules: [
    {
      match: '^add a greeting in (?<file>\\S+)',
      rounds: [
        { text: 'Adding it.', toolCalls: [{ name: 'write_file', args: { path: '{{file}}', content: 'hello\n' } }] },
        { text: 'Add a greeting file\n\nIt says hello.' },
        { text: 'Done: {{lastToolResult}}' },
      ],
    },
    {
      match: '^change line two',
      rounds: [
        {
          text: 'Editing.',
          toolCalls: [{ name: 'write_file', args: { path: 'app.txt', content: 'one\nTWO (branch)\nthree\n' } }],
        },
        { text: 'Change line two' },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    {
      match: '^Review the branch',
      rounds: [
        { text: 'Trying to write.', toolCalls: [{ name: 'write_file', args: { path: 'x.txt', content: 'x' } }] },
        { text: 'Review: app.txt:2 changes line two. {{lastToolResult}}' },
      ],
    },
    {
      match: '^merge it yourself',
      rounds: [
        {
          toolCalls: [
            {
              name: 'merge_change',
              args: {
                repo: 'demo',
                branch: 'main',
                base: 'main',
                sha: 'a'.repeat(40),
                from: 'a'.repeat(40),
                tests: 'passed',
              },
            },
          ],
        },
        { text: 'Tried: {{lastToolResult}}' },
      ],
    },
    {
      match: '^add and look in (?<file>\\S+)',
      rounds: [
        { toolCalls: [{ name: 'write_file', args: { path: '{{file}}', content: 'look\n' } }] },
        { text: 'Add a file to look at' },
        { text: 'Looking.', toolCalls: [{ name: 'list_files', args: { path: '.' } }] },
        { text: 'Saw: {{lastToolResult}}' },
      ],
    },
    {
      // A model with nothing to say after the merge, as models often have: rounds run out.
      match: '^quietly add (?<file>\\S+)',
      rounds: [
        { toolCalls: [{ name: 'write_file', args: { path: '{{file}}', content: 'quiet\n' } }] },
        { text: 'Add a quiet file' },
      ],
    },
    {
      match: '^take your time',
      rounds: [{ text: 'Working on it slowly, nothing to change.', chunkSize: 2, delayMs: 60 }],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const alice = { platform: 'test', userId: 'U1' }; // every harness turn's requester
const bob = { platform: 'test', userId: 'U2' }; // the approver
const mallory = { platform: 'test', userId: 'U666' };
const carol = { platform: 'test', userId: 'U3' }; // neither the requester of every turn nor an approver
const dave = { platform: 'test', userId: 'U4' };

interface Envelope {
  id: string;
  nonce: string;
  calls: Array<{ id: string; name: string; args: Record<string, string> }>;
}

describe('code work: /code, the change card, merge', () => {
  let db: TestDatabase;
  let h: Harness;
  let repo: ReturnType<typeof makeRepo>;
  let provider: RecordingProvider;
  let worktrees: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    repo = makeRepo(true);
    worktrees = path.join(repo.dir, 'worktrees');
    provider = new RecordingProvider(script);
    h = await startHarness({
      db,
      provider,
      env: { APPROVERS: 'test:U2', REPOS: `demo=${repo.clone}`, WORKTREES_DIR: worktrees },
    });
  });
  afterAll(async () => {
    await h.stop();
    await db.drop();
  });

  const code = (conversation: string, task: string) =>
    h.say(conversation, task, { type: 'CODE', priority: Priority.NORMAL, payload: { repo: 'demo' } });

  async function envelopeOf(itemId: string): Promise<Envelope> {
    return waitFor(
      async () => {
        const { rows } = await h.app.pool.query<{ id: string; nonce: string; calls: string }>(
          `SELECT id, nonce, calls FROM countersign.approval_envelopes
            WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
          [itemId],
        );
        const row = rows[0];
        return (
          row && {
            ...row,
            calls: (typeof row.calls === 'string' ? JSON.parse(row.calls) : row.calls) as Envelope['calls'],
          }
        );
      },
      30_000,
      'the card',
    );
  }

  /** The newest work item of a conversation (a continuation after a click). */
  async function latestItem(conversation: string): Promise<string> {
    const { rows } = await h.app.pool.query<{ id: string }>(
      `SELECT id FROM countersign.work_items WHERE conversation_id = $1 ORDER BY seq DESC LIMIT 1`,
      [conversation],
    );
    return rows[0]!.id;
  }

  /** Approves the write, and returns the change card's envelope. */
  async function throughWrite(item: WorkItem): Promise<Envelope> {
    const write = await envelopeOf(item.id);
    expect(write.calls[0]?.name).toBe('write_file');
    const ok = await h.app.approvals.submit(write.nonce, [{ toolCallId: write.calls[0]!.id, approved: true }], alice);
    expect(ok.ok).toBe(true);
    const continuation = await waitFor(
      async () => {
        const id = await latestItem(item.conversationId);
        return id !== item.id ? id : undefined;
      },
      10_000,
      'the continuation',
    );
    expect((await h.settled(continuation)).status).toBe('awaiting_approval');
    return envelopeOf(continuation);
  }

  const head = (ref = 'main') => safe(repo.clone, 'rev-parse', ref);

  it('commits the turn’s edits in a worktree, shows a change card, and only an approver merges exactly that commit', async () => {
    const before = head();
    const item = await code('code-1', 'add a greeting in hello.txt');
    const card = await throughWrite(item);
    const [call] = card.calls;
    expect(call?.name).toBe('merge_change');
    const { branch, sha, base } = call!.args as { branch: string; sha: string; base: string };
    expect(base).toBe('main');
    expect(branch).toMatch(/^countersign\/[0-9a-f]{12}$/);
    expect(safe(repo.clone, 'rev-parse', branch)).toBe(sha);
    // The commit: the bot as author, the requester in a trailer, the model's first line as subject.
    expect(safe(repo.clone, 'log', '-1', '--format=%an|%s', sha)).toBe('Countersign|Add a greeting file');
    expect(safe(repo.clone, 'log', '-1', '--format=%B', sha)).toContain('Requested-by: <test:U1>');
    expect(safe(repo.clone, 'show', `${sha}:hello.txt`)).toBe('hello');
    expect(head()).toBe(before);
    // The card's text names the change and its file.
    const cardText = [...h.outbound.messages.values()].map((m) => m.text).join('\n');
    expect(cardText).toContain('hello.txt');

    // The requester alone cannot land it; nor can a stranger.
    const own = await h.app.approvals.submit(card.nonce, [{ toolCallId: call!.id, approved: true }], alice);
    expect(own.ok).toBe(false);
    const stranger = await h.app.approvals.submit(card.nonce, [{ toolCallId: call!.id, approved: true }], mallory);
    expect(stranger.ok).toBe(false);
    expect(head()).toBe(before);

    const approved = await h.app.approvals.submit(card.nonce, [{ toolCallId: call!.id, approved: true }], bob);
    expect(approved.ok).toBe(true);
    const merge = await latestItem('code-1');
    const settled = await h.settled(merge);
    expect(settled.status).toBe('done');
    expect(settled.result?.text).toContain('Merged');
    expect(head()).toBe(sha);
    const { rows } = await h.app.pool.query<{ type: string; priority: number }>(
      `SELECT type, priority FROM countersign.work_items WHERE id = $1`,
      [merge],
    );
    expect(rows[0]).toEqual({ type: 'MERGE', priority: Priority.HIGH });
    // The worktree and the bot's branch are gone; a second click is stale.
    expect(safe(repo.clone, 'branch', '--list', branch)).toBe('');
    const again = await h.app.approvals.submit(card.nonce, [{ toolCallId: call!.id, approved: true }], bob);
    expect(again.ok).toBe(false);
    expect(head()).toBe(sha);
    const audit = await h.app.pool.query<{ event: string }>(
      `SELECT event FROM countersign.approval_audit WHERE event IN ('code_committed', 'merge_requested', 'merged') ORDER BY id`,
    );
    expect(audit.rows.map((r) => r.event)).toEqual(['code_committed', 'merge_requested', 'merged']);
    // The repository's hooks, fsmonitor and filters never ran.
    expect(existsSync(path.join(repo.marks))).toBe(true);
    expect(readdir(repo.marks)).toEqual([]);
  });

  it('refuses a merge when the branch moved after the card, and shows a new card for the new commit', async () => {
    const before = head();
    const item = await code('code-2', 'add a greeting in moved.txt');
    const card = await throughWrite(item);
    const { branch, sha } = card.calls[0]!.args as { branch: string; sha: string };
    const tree = safe(repo.clone, 'worktree', 'list', '--porcelain')
      .split('\n')
      .find((l) => l.startsWith('worktree ') && l.includes(path.basename(worktrees)) && !l.endsWith('clone'))!
      .slice('worktree '.length);
    writeFileSync(path.join(tree, 'later.txt'), 'later\n');
    safe(tree, 'add', 'later.txt');
    safe(tree, 'commit', '-q', '-m', 'later');
    const moved = safe(repo.clone, 'rev-parse', branch);
    expect(moved).not.toBe(sha);

    expect(
      (await h.app.approvals.submit(card.nonce, [{ toolCallId: card.calls[0]!.id, approved: true }], bob)).ok,
    ).toBe(true);
    const continuation = await latestItem('code-2');
    expect((await h.settled(continuation)).status).toBe('awaiting_approval');
    expect(head()).toBe(before);
    const fresh = await envelopeOf(continuation);
    expect(fresh.calls[0]?.args.sha).toBe(moved);
  });

  it('reports a conflict by file and leaves the base untouched', async () => {
    const item = await code('code-3', 'change line two');
    const card = await throughWrite(item);
    // Meanwhile someone changes the same line on main.
    writeFileSync(path.join(repo.clone, 'app.txt'), 'one\nTWO (main)\nthree\n');
    safe(repo.clone, 'commit', '-q', '-am', 'main edit');
    const before = head();
    expect(
      (await h.app.approvals.submit(card.nonce, [{ toolCallId: card.calls[0]!.id, approved: true }], bob)).ok,
    ).toBe(true);
    const continuation = await latestItem('code-3');
    const settled = await h.settled(continuation);
    expect(JSON.stringify(settled)).toContain('app.txt');
    expect(head()).toBe(before);
    expect(readFileSync(path.join(repo.clone, 'app.txt'), 'utf8')).toBe('one\nTWO (main)\nthree\n');
    const audit = await h.app.pool.query(`SELECT 1 FROM countersign.approval_audit WHERE event = 'merge_conflict'`);
    expect(audit.rowCount).toBe(1);
  });

  it('discards on Deny: the worktree and branch go, the base does not change', async () => {
    const before = head();
    const item = await code('code-4', 'add a greeting in discarded.txt');
    const card = await throughWrite(item);
    const { branch } = card.calls[0]!.args as { branch: string };
    // The requester may withdraw their own change.
    const denied = await h.app.approvals.submit(
      card.nonce,
      [{ toolCallId: card.calls[0]!.id, approved: false }],
      alice,
    );
    expect(denied.ok).toBe(true);
    expect((await h.settled(await latestItem('code-4'))).status).toBe('done');
    expect(safe(repo.clone, 'branch', '--list', branch)).toBe('');
    expect(head()).toBe(before);
    const audit = await h.app.pool.query(`SELECT 1 FROM countersign.approval_audit WHERE event = 'discarded'`);
    expect(audit.rowCount).toBe(1);
  });

  it('reviews a branch read-only: the diff in the prompt, no tool that writes, file:line in the answer', async () => {
    safe(repo.clone, 'branch', 'feature', 'main');
    const tree = path.join(repo.dir, 'feature-tree');
    safe(repo.clone, 'worktree', 'add', '-q', tree, 'feature');
    writeFileSync(path.join(tree, 'app.txt'), 'one\nTWO (feature)\nthree\n');
    safe(tree, 'commit', '-q', '-am', 'feature edit');
    const featureHead = safe(repo.clone, 'rev-parse', 'feature');
    provider.requests.length = 0;
    const item = await h.say('review-1', 'Review the branch feature of demo against its base.', {
      type: 'REVIEW',
      priority: Priority.HIGH,
      payload: { repo: 'demo', branch: 'feature' },
    });
    const settled = await h.settled(item.id);
    expect(settled.status).toBe('done');
    expect(settled.result?.text).toContain('app.txt:2');
    const first = provider.requests[0]!;
    expect(first.system).toContain('TWO (feature)');
    const offered = first.tools.map((t) => t.name);
    expect(offered).toContain('read_file');
    expect(offered).not.toContain('write_file');
    expect(offered).not.toContain('merge_change');
    // The write the model tried anyway was never run, and the branch is as it was.
    expect(settled.result?.text).toMatch(/unknown|not available|no tool/i);
    expect(safe(repo.clone, 'rev-parse', 'feature')).toBe(featureHead);
    expect(safe(repo.clone, 'branch', '--list', 'feature')).not.toBe('');
  });

  it('removes a review’s worktree when the review ends, and leaves the reviewed branch', async () => {
    safe(repo.clone, 'branch', 'reviewed', 'main');
    const item = await h.say('review-2', 'Review the branch reviewed of demo against its base.', {
      type: 'REVIEW',
      priority: Priority.HIGH,
      payload: { repo: 'demo', branch: 'reviewed' },
    });
    expect((await h.settled(item.id)).status).toBe('done');
    const root = path.join(worktrees, 'demo', shortConversationId('review-2'));
    expect(existsSync(root)).toBe(false);
    expect(safe(repo.clone, 'worktree', 'list')).not.toContain(root);
    expect(safe(repo.clone, 'branch', '--list', 'reviewed')).not.toBe('');
  });

  it('shares the full diff as a file in the thread when Full diff is pressed, and refuses a forged card', async () => {
    const item = await code('code-6', 'add a greeting in shared.txt');
    const card = await throughWrite(item);
    const { sha } = card.calls[0]!.args as { sha: string };
    const shared = await h.app.approvals.shareFullDiff(card.nonce, mallory);
    expect(shared).toMatchObject({ ok: true });
    const file = await waitFor(
      async () => h.outbound.uploads.find((u) => u.filename === `demo-${sha.slice(0, 12)}.diff`),
      20_000,
      'the diff to be shared',
    );
    expect(file.content.toString('utf8')).toContain('+hello');
    expect(file.content.toString('utf8')).toContain('b/shared.txt');
    expect(file.channel).toBe('code-6');
    const forged = await h.app.approvals.shareFullDiff('A'.repeat(32), mallory);
    expect(forged.ok).toBe(false);
    // Not a change card: a write's card has no diff to share.
    const other = await code('code-7', 'add a greeting in other.txt');
    const write = await envelopeOf(other.id);
    expect((await h.app.approvals.shareFullDiff(write.nonce, alice)).ok).toBe(false);
  });

  it('keeps interactive chat moving while a CODE turn runs, and runs RESEARCH at LOW', async () => {
    const slow = await h.say('code-slow', 'take your time', {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'demo' },
    });
    await waitFor(
      async () => {
        const { rows } = await h.app.pool.query(`SELECT status FROM countersign.work_items WHERE id = $1`, [slow.id]);
        return rows[0]?.status === 'running' ? true : undefined;
      },
      20_000,
      'the CODE turn to run',
    );
    const chat = await h.say('chat-1', 'hello there');
    expect((await h.settled(chat.id)).status).toBe('done');
    const { rows } = await h.app.pool.query(`SELECT status FROM countersign.work_items WHERE id = $1`, [slow.id]);
    expect(rows[0]?.status).toBe('running');
    const research = await h.say('research-1', 'what is new', { type: 'RESEARCH', priority: Priority.LOW });
    expect((await h.settled(research.id)).status).toBe('done');
    const job = await h.app.pool.query<{ priority: number }>(
      `SELECT priority FROM countersign.work_items WHERE id = $1`,
      [research.id],
    );
    expect(job.rows[0]?.priority).toBe(Priority.LOW);
    expect((await h.settled(slow.id)).status).toBe('done');
  });

  it('refuses a merge_change the model calls itself, as if no such tool existed', async () => {
    const before = head();
    const item = await code('code-8', 'merge it yourself');
    const settled = await h.settled(item.id);
    expect(settled.status).toBe('done');
    expect(settled.result?.text).toContain('There is no tool named "merge_change"');
    expect(head()).toBe(before);
    const cards = await h.app.pool.query(`SELECT 1 FROM countersign.approval_envelopes WHERE work_item_id = $1`, [
      item.id,
    ]);
    expect(cards.rowCount).toBe(0);
  });

  it('after a discard, the rest of the turn never falls back to the deployment’s workspace', async () => {
    writeFileSync(path.join(h.config.AGENT_WORKSPACE_ROOT, 'DEPLOYMENT-ONLY.txt'), 'not for code work\n');
    const item = await code('code-9', 'add and look in looked.txt');
    const card = await throughWrite(item);
    expect(
      (await h.app.approvals.submit(card.nonce, [{ toolCallId: card.calls[0]!.id, approved: false }], alice)).ok,
    ).toBe(true);
    const settled = await h.settled(await latestItem('code-9'));
    expect(settled.result?.text).toContain('Saw:');
    expect(settled.result?.text).not.toContain('DEPLOYMENT-ONLY');
  });

  it('never lets an author of the change countersign it, though someone else asked for the card', async () => {
    // Bob, an approver, asks for the change: his turn commits it.
    const item = await h.say('code-10', 'add a greeting in authored.txt', {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'demo' },
      requester: bob,
    });
    const write = await envelopeOf(item.id);
    expect(
      (await h.app.approvals.submit(write.nonce, [{ toolCallId: write.calls[0]!.id, approved: true }], bob)).ok,
    ).toBe(true);
    const first = await envelopeOf(
      await waitFor(
        async () => {
          const id = await latestItem('code-10');
          return id !== item.id ? id : undefined;
        },
        10_000,
        'the continuation',
      ),
    );
    expect(first.calls[0]?.args.authors).toEqual(['test:U2']);
    // Carol writes in the thread: her turn shows a card for the same change, asked for by her.
    const later = await h.say('code-10', 'thanks', { requester: carol });
    const second = await envelopeOf(later.id);
    expect(second.calls[0]?.name).toBe('merge_change');
    const own = await h.app.approvals.submit(second.nonce, [{ toolCallId: second.calls[0]!.id, approved: true }], bob);
    expect(own.ok).toBe(false);
    expect(head()).not.toBe(second.calls[0]!.args.sha);
  });

  /** Carol asks for a change and approves its write; Dave's "thanks" in the thread shows its card. */
  async function cardAskedByAnother(conversation: string, file: string) {
    const item = await h.say(conversation, `add a greeting in ${file}`, {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'demo' },
      requester: carol,
    });
    const write = await envelopeOf(item.id);
    expect(
      (await h.app.approvals.submit(write.nonce, [{ toolCallId: write.calls[0]!.id, approved: true }], carol)).ok,
    ).toBe(true);
    await waitFor(
      async () => ((await latestItem(conversation)) !== item.id ? true : undefined),
      10_000,
      'the continuation',
    );
    await h.settled(await latestItem(conversation));
    const later = await h.say(conversation, 'thanks', { requester: dave });
    const card = await envelopeOf(later.id);
    expect(card.calls[0]?.name).toBe('merge_change');
    expect(card.calls[0]?.args.authors).toEqual(['test:U3']);
    return { card, branch: (card.calls[0]!.args as { branch: string }).branch };
  }

  const discardBy = (card: Envelope, who: typeof alice) =>
    h.app.approvals.submit(card.nonce, [{ toolCallId: card.calls[0]!.id, approved: false }], who);

  it('lets an author of the change discard it, though someone else asked for the card, and never a stranger', async () => {
    const { card, branch } = await cardAskedByAnother('code-11', 'authored-discard.txt');
    const stranger = await discardBy(card, mallory);
    expect(stranger.ok).toBe(false);
    expect(safe(repo.clone, 'branch', '--list', branch)).toContain(branch);
    expect((await discardBy(card, carol)).ok).toBe(true);
    await waitFor(
      async () => (safe(repo.clone, 'branch', '--list', branch) === '' ? true : undefined),
      10_000,
      'the branch to go',
    );
  });

  it('lets the requester of the card discard a change others wrote, though not an approver', async () => {
    const { card, branch } = await cardAskedByAnother('code-12', 'requester-discard.txt');
    expect((await discardBy(card, dave)).ok).toBe(true);
    await waitFor(
      async () => (safe(repo.clone, 'branch', '--list', branch) === '' ? true : undefined),
      10_000,
      'the branch to go',
    );
  });

  it('ends a merged change with the merge’s own result when the model has nothing to add', async () => {
    const item = await code('code-13', 'quietly add quiet.txt');
    const card = await throughWrite(item);
    const { sha } = card.calls[0]!.args as { sha: string };
    expect(
      (await h.app.approvals.submit(card.nonce, [{ toolCallId: card.calls[0]!.id, approved: true }], bob)).ok,
    ).toBe(true);
    const settled = await h.settled(await latestItem('code-13'));
    expect(settled.result?.text).toContain(`Merged ${sha.slice(0, 12)} into main`);
    expect(settled.result?.text).not.toContain('couldn');
  });

  it('removes the worktree and branch of a change card that expires undecided', async () => {
    const item = await code('code-14', 'add a greeting in abandoned.txt');
    const card = await throughWrite(item);
    const { branch } = card.calls[0]!.args as { branch: string };
    const root = path.join(worktrees, 'demo', shortConversationId('code-14'));
    expect(safe(repo.clone, 'worktree', 'list')).toContain(root);
    await h.app.pool.query(`UPDATE countersign.approval_envelopes SET expires_at = now() WHERE id = $1`, [card.id]);
    expect(await h.app.approvals.expireStale()).toBeGreaterThanOrEqual(1);
    expect(safe(repo.clone, 'worktree', 'list')).not.toContain(root);
    expect(safe(repo.clone, 'branch', '--list', branch)).toBe('');
  });

  it('refuses an unknown repository by listing the known ones', async () => {
    const item = await h.say('code-5', 'add a greeting', {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'nope' },
    });
    const settled = await h.settled(item.id);
    expect(settled.status).toBe('failed');
    const text = [...h.outbound.messages.values()].map((m) => m.text).join('\n');
    expect(text).toContain('Known: demo');
  });
});

function readdir(dir: string): string[] {
  return execFileSync('ls', ['-A', dir], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

describe('code work with an external coding CLI (CODING_AGENT_COMMAND)', () => {
  let h: Harness;
  let repo: ReturnType<typeof makeRepo>;

  beforeAll(async () => {
    repo = makeRepo(true);
    const cli = path.resolve(import.meta.dirname, '../fakes/coding-cli.mjs');
    h = await startHarness({
      script,
      env: {
        APPROVERS: 'test:U2',
        REPOS: `demo=${repo.clone}`,
        WORKTREES_DIR: path.join(repo.dir, 'worktrees'),
        CODING_AGENT_COMMAND: JSON.stringify([process.execPath, cli, '--mode=stream-json', '--git-commit', '{task}']),
        // Unconfined, so the CLI can commit itself (sandboxed, git is read-only: test/sandbox/).
        SANDBOX: 'off',
      },
    });
  });
  afterAll(() => h.stop());

  it('runs the CLI in the worktree instead of the loop, and its change gets the same card', async () => {
    const before = safe(repo.clone, 'rev-parse', 'main');
    const item = await h.say('cli-1', 'write notes.txt: from the cli', {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'demo' },
    });
    const settled = await h.settled(item.id);
    expect(settled.status).toBe('awaiting_approval');
    const { rows } = await h.app.pool.query<{ calls: string }>(
      `SELECT calls FROM countersign.approval_envelopes WHERE work_item_id = $1`,
      [item.id],
    );
    const [call] = JSON.parse(rows[0]!.calls) as Array<{ name: string; args: { sha: string } }>;
    expect(call?.name).toBe('merge_change');
    expect(safe(repo.clone, 'show', `${call!.args.sha}:notes.txt`)).toBe('from the cli');
    // The CLI committed with git itself: the repository's hooks and fsmonitor stayed quiet.
    expect(safe(repo.clone, 'log', '-1', '--format=%an', call!.args.sha)).toBe('cli');
    expect(safe(repo.clone, 'rev-parse', 'main')).toBe(before);
    // The CLI's progress was shown as text, never as a JSON object.
    const shown = [...h.outbound.messages.values()].map((m) => m.text).join('\n');
    expect(shown).not.toMatch(/\{"type":/);
    expect(readdir(repo.marks)).toEqual([]);
  });
});
