/**
 * ChangeAuthors on real git and real Postgres: every way content reaches a change — a program's
 * write, a commit the bot did not make, a branch moved under the worktree, a file a person sent — is
 * recorded for the people behind the turn, and content already recorded is never attributed again.
 */
import { chmodSync, mkdirSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INBOX_DIR, inboxFolderOf } from '../../src/core/inbox.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { ChangeAuthors } from '../../src/repos/change-authors.ts';
import { commitWorktree } from '../../src/repos/changes.ts';
import { CodeWorkspaces } from '../../src/repos/code-workspaces.ts';
import { RepoCatalog } from '../../src/repos/repos-config.ts';
import { Worktrees, type Worktree } from '../../src/repos/worktrees.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { makeHostile, makeRepo, setupGit } from './git-fixture.ts';

const alice = { platform: 'test', userId: 'U1' };
const bob = { platform: 'test', userId: 'U2' };
const carol = { platform: 'test', userId: 'U3' };

describe('the authors of a change, recorded when content is written', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let authors: ChangeAuthors;

  beforeAll(async () => {
    db = await createTestDatabase();
    await migrate(db.url, createLogger('silent'));
    pool = createPool(db.url, 2);
    authors = new ChangeAuthors(pool);
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  /** A clone and a conversation's worktree of it, with the workspaces that own it. */
  async function open(conversation: string, hostile = false) {
    const { dir, clone } = makeRepo();
    const pwned = hostile ? makeHostile(dir, clone).pwned : undefined;
    const catalog = new RepoCatalog([{ name: 'demo', path: clone }]);
    const workspaces = new CodeWorkspaces(
      catalog,
      new Worktrees({ root: path.join(dir, 'worktrees'), maxPerRepo: 5 }),
      authors,
    );
    const bound = await workspaces.bind(conversation, { repo: 'demo', mode: 'code' });
    expect(bound.ok).toBe(true);
    const worktree = (await workspaces.current(conversation))!.worktree;
    return { clone, worktree, workspaces, pwned };
  }

  const rows = async (worktree: Worktree) =>
    (
      await pool.query<{ path: string; person: string; how: string }>(
        `SELECT DISTINCT path, person, how FROM countersign.change_authors WHERE repo = $1 AND branch = $2
          ORDER BY path, person, how`,
        [worktree.repo, worktree.branch],
      )
    ).rows;

  it('records the requester of a turn whose program wrote a file, and not the next turn that commits it', async () => {
    const { worktree } = await open('conv-program');
    // A program run in the worktree (not a workspace tool) writes and deletes.
    writeFileSync(path.join(worktree.path, 'generated.js'), 'module.exports = 1;\n');
    rmSync(path.join(worktree.path, 'README.md'));
    expect(await authors.record(worktree, [{ person: alice, how: 'requested' }])).toEqual(
      expect.arrayContaining(['generated.js', 'README.md']),
    );
    // Bob's turn commits what is there: the same content, so Bob is behind none of it.
    expect(await commitWorktree(worktree.path, { message: 'bob commits', trailers: [] })).toBeDefined();
    expect(await authors.record(worktree, [{ person: bob, how: 'requested' }])).toEqual([]);
    expect(await authors.authorsOf(worktree)).toEqual(['test:U1']);
    // Bob then changes the file: now he is an author too.
    writeFileSync(path.join(worktree.path, 'generated.js'), 'module.exports = 2;\n');
    expect(await authors.record(worktree, [{ person: bob, how: 'requested' }])).toEqual(['generated.js']);
    expect(await authors.authorsOf(worktree)).toEqual(['test:U1', 'test:U2']);
  });

  it('records the people behind a program run for the whole change, though nothing changed when it returned', async () => {
    const { worktree } = await open('conv-background');
    // run_command returns; a process it left behind writes later, when Bob's turn looks.
    expect(
      await authors.record(
        worktree,
        [
          { person: alice, how: 'requested' },
          { person: carol, how: 'approved' },
        ],
        {
          ranProgram: true,
        },
      ),
    ).toEqual([]);
    writeFileSync(path.join(worktree.path, 'later.txt'), 'written in the background\n');
    expect(await authors.record(worktree, [{ person: bob, how: 'requested' }])).toEqual(['later.txt']);
    expect(await authors.authorsOf(worktree)).toEqual(['test:U1', 'test:U2', 'test:U3']);
  });

  it('records the approver beside the requester, for exactly the files the approved call wrote', async () => {
    const { worktree } = await open('conv-approved');
    writeFileSync(path.join(worktree.path, 'before.txt'), 'asked\n');
    await authors.record(worktree, [{ person: alice, how: 'requested' }]);
    writeFileSync(path.join(worktree.path, 'approved.txt'), 'approved\n');
    await authors.record(worktree, [
      { person: alice, how: 'requested' },
      { person: carol, how: 'approved' },
    ]);
    expect(await rows(worktree)).toEqual([
      { path: 'approved.txt', person: 'test:U1', how: 'requested' },
      { path: 'approved.txt', person: 'test:U3', how: 'approved' },
      { path: 'before.txt', person: 'test:U1', how: 'requested' },
    ]);
  });

  it('sees content committed by a program, a branch moved under the worktree, and a mode change', async () => {
    const { clone, worktree } = await open('conv-committed');
    // A coding CLI commits itself, with no trailer.
    writeFileSync(path.join(worktree.path, 'cli.txt'), 'from the cli\n');
    setupGit(worktree.path, 'add', 'cli.txt');
    setupGit(worktree.path, 'commit', '-q', '-m', 'cli');
    expect(await authors.record(worktree, [{ person: alice, how: 'requested' }])).toEqual(['cli.txt']);
    // Someone moves the branch to other content without touching the worktree's files.
    writeFileSync(path.join(worktree.path, 'moved.txt'), 'moved\n');
    setupGit(worktree.path, 'add', 'moved.txt');
    const movedTree = setupGit(worktree.path, 'write-tree').trim();
    setupGit(worktree.path, 'reset', '-q', '--', 'moved.txt');
    rmSync(path.join(worktree.path, 'moved.txt'));
    const commit = setupGit(worktree.path, 'commit-tree', movedTree, '-p', 'HEAD', '-m', 'moved').trim();
    setupGit(clone, 'update-ref', `refs/heads/${worktree.branch}`, commit);
    expect(await authors.record(worktree, [{ person: bob, how: 'requested' }])).toEqual(['moved.txt']);
    // Making a file executable changes what it is.
    setupGit(worktree.path, 'reset', '-q', '--hard', commit);
    await authors.record(worktree, [{ person: bob, how: 'requested' }]);
    setupGit(worktree.path, 'update-index', '--chmod=+x', 'cli.txt');
    chmodSync(path.join(worktree.path, 'cli.txt'), 0o755);
    expect(await authors.record(worktree, [{ person: carol, how: 'requested' }])).toEqual(['cli.txt']);
  });

  it('records the sender of files that land in the worktree, even where the repository ignores them', async () => {
    const { worktree } = await open('conv-files');
    writeFileSync(path.join(worktree.path, '.gitignore'), `${INBOX_DIR}/\n`);
    const folder = path.join(worktree.path, INBOX_DIR, inboxFolderOf('conv-files'));
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, 'notes.test.js'), 'require("child_process")\n');
    symlinkSync('/etc/hostname', path.join(folder, 'link'));
    const paths = await authors.record(worktree, [{ person: bob, how: 'requested' }]);
    expect(paths).toEqual(
      expect.arrayContaining([
        `${INBOX_DIR}/${inboxFolderOf('conv-files')}/notes.test.js`,
        `${INBOX_DIR}/${inboxFolderOf('conv-files')}/link`,
      ]),
    );
    expect(await authors.authorsOf(worktree)).toEqual(['test:U2']);
  });

  it('forgets a change’s authors once its branch is gone, and keeps those of a live conversation at a sweep', async () => {
    const gone = await open('conv-gone');
    writeFileSync(path.join(gone.worktree.path, 'a.txt'), 'a\n');
    await authors.record(gone.worktree, [{ person: alice, how: 'requested' }]);
    await gone.workspaces.removeWorktree('conv-gone');
    expect(await authors.authorsOf(gone.worktree)).toEqual([]);

    const live = await open('conv-live');
    writeFileSync(path.join(live.worktree.path, 'b.txt'), 'b\n');
    await authors.record(live.worktree, [{ person: alice, how: 'requested' }]);
    const repos = [{ name: 'demo', path: live.clone }];
    await live.workspaces.sweep(repos, async () => true);
    expect(await authors.authorsOf(live.worktree)).toEqual(['test:U1']);
    await live.workspaces.sweep(repos, async () => false);
    expect(await authors.authorsOf(live.worktree)).toEqual([]);
  });

  it('sees a same-size rewrite that keeps the old mtime, whatever the repository says of ctime', async () => {
    const { clone, worktree } = await open('conv-stat');
    setupGit(clone, 'config', 'core.trustctime', 'false');
    setupGit(clone, 'config', 'core.checkStat', 'minimal');
    const file = path.join(worktree.path, 'README.md');
    const past = new Date('2020-01-01T00:00:00Z');
    utimesSync(file, past, past);
    // The index now holds the old mtime, written well after it: an entry git trusts by its stat.
    setupGit(worktree.path, 'update-index', '--refresh');
    // Git keeps ctime to the second: the rewrite comes in a later second than the refresh, as a
    // program's would.
    const refreshed = Math.floor(Date.now() / 1000);
    while (Math.floor(Date.now() / 1000) <= refreshed) await new Promise((r) => setTimeout(r, 50));
    writeFileSync(file, '# DEMO\n');
    utimesSync(file, past, past);
    expect(await authors.record(worktree, [{ person: alice, how: 'requested' }])).toEqual(['README.md']);
  });

  it('runs none of a hostile repository’s programs while it looks', async () => {
    const { worktree, pwned } = await open('conv-hostile', true);
    writeFileSync(path.join(worktree.path, 'file.txt'), 'x\n');
    expect(await authors.record(worktree, [{ person: alice, how: 'requested' }])).toContain('file.txt');
    expect(readdirSync(pwned!)).toEqual([]);
  });
});
