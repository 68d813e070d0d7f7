/**
 * Who may countersign a merge (docs/policy.md): everyone whose turn or approval put content into a
 * change is recorded in the database when the content is written, and none of them can give that
 * change's second signature — whoever's turn later commits it, and whatever its trailers say.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setupGit } from './git-fixture.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { buttonValue } from '../../src/core/buttons.ts';
import { Priority } from '../../src/core/work-item.ts';

const sh = (cwd: string, ...args: string[]) => setupGit(cwd, ...args).trim();

/** A throw-away clone on `main` with one commit. */
function makeRepo(): { dir: string; clone: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'cs-authors-'));
  const clone = path.join(dir, 'clone');
  mkdirSync(clone);
  sh(clone, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(clone, 'README.md'), '# demo\n');
  sh(clone, 'add', '.');
  sh(clone, 'commit', '-q', '-m', 'first');
  return { dir, clone };
}

const script: Script = {
  rules: [
    {
      match: '^write two files',
      rounds: [
        { text: 'First.', toolCalls: [{ name: 'write_file', args: { path: 'first.txt', content: 'alice 1\n' } }] },
        { text: 'Second.', toolCalls: [{ name: 'write_file', args: { path: 'second.txt', content: 'alice 2\n' } }] },
        { text: 'Two files' },
      ],
    },
    {
      match: '^write one file',
      rounds: [
        { text: 'Writing.', toolCalls: [{ name: 'write_file', args: { path: 'bob.txt', content: 'bob\n' } }] },
        { text: 'One file' },
      ],
    },
    {
      match: '^write both files',
      rounds: [
        {
          text: 'Both.',
          toolCalls: [
            { name: 'write_file', args: { path: 'one.txt', content: 'one\n' } },
            { name: 'write_file', args: { path: 'two.txt', content: 'two\n' } },
          ],
        },
        { text: 'Both files' },
      ],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const alice = { platform: 'test', userId: 'U1' };
const bob = { platform: 'test', userId: 'U2' };

interface Envelope {
  id: string;
  nonce: string;
  calls: Array<{ id: string; name: string; args: Record<string, unknown> }>;
}

/** The card a work item parked on, once it is posted. */
async function envelopeOf(h: Harness, itemId: string): Promise<Envelope> {
  return waitFor(
    async () => {
      const { rows } = await h.app.pool.query<{ id: string; nonce: string; calls: string | Envelope['calls'] }>(
        `SELECT id, nonce, calls FROM countersign.approval_envelopes
          WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
        [itemId],
      );
      const row = rows[0];
      return row && { ...row, calls: typeof row.calls === 'string' ? JSON.parse(row.calls) : row.calls };
    },
    30_000,
    'the card',
  );
}

/** The newest work item of a conversation other than `not`. */
async function nextItem(h: Harness, conversation: string, not: string): Promise<string> {
  return waitFor(
    async () => {
      const { rows } = await h.app.pool.query<{ id: string }>(
        `SELECT id FROM countersign.work_items WHERE conversation_id = $1 ORDER BY seq DESC LIMIT 1`,
        [conversation],
      );
      return rows[0] && rows[0].id !== not ? rows[0].id : undefined;
    },
    10_000,
    'the next work item',
  );
}

describe('who may countersign a merge: the authors recorded when content is written', () => {
  let h: Harness;
  let repo: ReturnType<typeof makeRepo>;

  beforeAll(async () => {
    repo = makeRepo();
    // Alice is the only approver.
    h = await startHarness({
      script,
      env: { APPROVERS: 'test:U1', REPOS: `demo=${repo.clone}`, WORKTREES_DIR: path.join(repo.dir, 'worktrees') },
    });
  });
  afterAll(() => h.stop());

  it('refuses the countersignature of a person whose parked turn wrote the file another person’s turn committed', async () => {
    const before = sh(repo.clone, 'rev-parse', 'main');
    const item = await h.say('authors-1', 'write two files', {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'demo' },
      requester: alice,
    });
    // Alice approves her own first write (a write only asks) …
    const first = await envelopeOf(h, item.id);
    expect(first.calls[0]?.name).toBe('write_file');
    const approved = await h.app.approvals.submit(
      first.nonce,
      [{ toolCallId: first.calls[0]!.id, approved: true }],
      alice,
    );
    expect(approved.ok).toBe(true);
    // … and her turn parks on the second one, with first.txt written and nothing committed.
    const continuation = await nextItem(h, 'authors-1', item.id);
    expect((await h.settled(continuation)).status).toBe('awaiting_approval');
    expect((await envelopeOf(h, continuation)).calls[0]?.name).toBe('write_file');

    // Bob, who may not approve anything, says hello: his turn commits Alice's file under his name.
    const hello = await h.say('authors-1', 'hello', { requester: bob });
    const card = await envelopeOf(h, hello.id);
    const [merge] = card.calls;
    expect(merge?.name).toBe('merge_change');
    const sha = merge!.args.sha as string;
    expect(sh(repo.clone, 'show', `${sha}:first.txt`)).toBe('alice 1');
    expect(sh(repo.clone, 'log', '-1', '--format=%B', sha)).toContain('Requested-by: <test:U2>');

    const countersigned = await h.app.approvals.submit(card.nonce, [{ toolCallId: merge!.id, approved: true }], alice);
    expect(countersigned.ok).toBe(false);
    expect(sh(repo.clone, 'rev-parse', 'main')).toBe(before);
    // The card names Alice as an author, from the database: she wrote and approved first.txt.
    expect(merge!.args.authors).toEqual(['test:U1']);

    const { rows } = await h.app.pool.query<{ path: string; person: string; how: string }>(
      `SELECT DISTINCT path, person, how FROM countersign.change_authors WHERE path = 'first.txt'
        ORDER BY path, person, how`,
    );
    expect(rows).toEqual([
      { path: 'first.txt', person: 'test:U1', how: 'approved' },
      { path: 'first.txt', person: 'test:U1', how: 'requested' },
    ]);
  });

  it('refuses the countersignature of the approver who let a write of the change run', async () => {
    const before = sh(repo.clone, 'rev-parse', 'main');
    const item = await h.say('authors-2', 'write one file', {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'demo' },
      requester: bob,
    });
    const write = await envelopeOf(h, item.id);
    // Alice approves Bob's write; his turn ends with a card he asked for.
    const approved = await h.app.approvals.submit(
      write.nonce,
      [{ toolCallId: write.calls[0]!.id, approved: true }],
      alice,
    );
    expect(approved.ok).toBe(true);
    const card = await envelopeOf(h, await nextItem(h, 'authors-2', item.id));
    const [merge] = card.calls;
    expect(merge?.name).toBe('merge_change');
    const countersigned = await h.app.approvals.submit(card.nonce, [{ toolCallId: merge!.id, approved: true }], alice);
    expect(countersigned.ok).toBe(false);
    expect(sh(repo.clone, 'rev-parse', 'main')).toBe(before);
    expect(merge!.args.authors).toEqual(['test:U1', 'test:U2']);
  });
});

describe('who may countersign a merge: a card several approvers decided', () => {
  let h: Harness;
  let repo: ReturnType<typeof makeRepo>;
  const carol = { platform: 'test', userId: 'U3' };

  beforeAll(async () => {
    repo = makeRepo();
    h = await startHarness({
      script,
      env: {
        APPROVERS: 'test:U1,test:U3',
        REPOS: `demo=${repo.clone}`,
        WORKTREES_DIR: path.join(repo.dir, 'worktrees'),
      },
    });
  });
  afterAll(() => h.stop());

  it('records the approver of each call, not only the person whose click completed the card', async () => {
    const before = sh(repo.clone, 'rev-parse', 'main');
    const item = await h.say('authors-3', 'write both files', {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'demo' },
      requester: bob,
    });
    const writes = await envelopeOf(h, item.id);
    expect(writes.calls.map((c) => c.name)).toEqual(['write_file', 'write_file']);
    // Alice approves the first write, Carol the second (one button per call): Carol's click completes the card.
    const first = await h.app.approvals.click(buttonValue(writes.nonce, 'a0'), alice);
    expect(first).toMatchObject({ ok: true, partial: true });
    const second = await h.app.approvals.click(buttonValue(writes.nonce, 'a1'), carol);
    expect(second.ok).toBe(true);
    const card = await envelopeOf(h, await nextItem(h, 'authors-3', item.id));
    const [merge] = card.calls;
    expect(merge?.name).toBe('merge_change');
    // Alice approved one.txt: she may not countersign the change that holds it.
    const countersigned = await h.app.approvals.submit(card.nonce, [{ toolCallId: merge!.id, approved: true }], alice);
    expect(countersigned.ok).toBe(false);
    expect(sh(repo.clone, 'rev-parse', 'main')).toBe(before);
    expect(merge!.args.authors).toEqual(['test:U1', 'test:U2', 'test:U3']);
  });
});

describe('who may countersign a merge: a coding CLI’s own commit', () => {
  let h: Harness;
  let repo: ReturnType<typeof makeRepo>;

  beforeAll(async () => {
    repo = makeRepo();
    const cli = path.resolve(import.meta.dirname, '../fakes/coding-cli.mjs');
    // Bob is the only approver.
    h = await startHarness({
      script,
      env: {
        APPROVERS: 'test:U2',
        REPOS: `demo=${repo.clone}`,
        WORKTREES_DIR: path.join(repo.dir, 'worktrees'),
        CODING_AGENT_COMMAND: JSON.stringify([process.execPath, cli, '--mode=stream-json', '--git-commit', '{task}']),
        // In the sandbox a CLI cannot commit (the worktree's git folders are read-only); a CLI that
        // commits itself is what SANDBOX=off allows, and its authors must still be recorded.
        SANDBOX: 'off',
      },
    });
  });
  afterAll(() => h.stop());

  it('records the requester of a run whose CLI committed without a trailer, and refuses their countersignature', async () => {
    const before = sh(repo.clone, 'rev-parse', 'main');
    const item = await h.say('cli-authors', 'write notes.txt: from bob', {
      type: 'CODE',
      priority: Priority.NORMAL,
      payload: { repo: 'demo' },
      requester: bob,
    });
    const mine = await envelopeOf(h, item.id);
    const sha = mine.calls[0]!.args.sha as string;
    // The CLI committed itself: no Requested-by trailer names Bob.
    expect(sh(repo.clone, 'log', '-1', '--format=%an|%B', sha)).not.toContain('Requested-by');

    // Alice's hello shows a card of her own for the same commit; Bob may not countersign it.
    const hello = await h.say('cli-authors', 'hello', { requester: alice });
    const card = await envelopeOf(h, hello.id);
    expect(card.calls[0]!.args.sha).toBe(sha);
    const countersigned = await h.app.approvals.submit(
      card.nonce,
      [{ toolCallId: card.calls[0]!.id, approved: true }],
      bob,
    );
    expect(countersigned.ok).toBe(false);
    expect(sh(repo.clone, 'rev-parse', 'main')).toBe(before);
    expect(mine.calls[0]!.args.authors).toEqual(['test:U2']);
    expect(card.calls[0]!.args.authors).toEqual(['test:U2']);
  });
});
