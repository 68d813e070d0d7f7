import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { mergeExactly, pushBase } from '../../src/repos/merge.ts';
import { commitCount, commitFiles, makeHostile, makeRepo, rev, setupGit } from './git-fixture.ts';

/** A branch off `main` with one commit of `files`; the clone stays on `main`. Returns its sha. */
function branchWith(clone: string, branch: string, files: Record<string, string>): string {
  setupGit(clone, 'checkout', '-q', '-b', branch, 'main');
  const sha = commitFiles(clone, files, `work on ${branch}`);
  setupGit(clone, 'checkout', '-q', 'main');
  return sha;
}

const status = (cwd: string) => setupGit(cwd, 'status', '--porcelain').trim();
const read = (cwd: string, name: string) => readFileSync(path.join(cwd, name), 'utf8');
const parents = (cwd: string, commit: string) => setupGit(cwd, 'log', '-1', '--format=%P', commit).trim().split(' ');

describe('mergeExactly', () => {
  it('fast-forwards the base to exactly the sha, and the checked-out files follow', async () => {
    const { clone } = makeRepo();
    const sha = branchWith(clone, 'countersign/a', { 'new.txt': 'new\n' });
    const result = await mergeExactly(clone, 'main', { branch: 'countersign/a', sha, message: 'merge a' });
    expect(result).toEqual({ outcome: 'merged', commit: sha, fastForward: true });
    expect(rev(clone, 'main')).toBe(sha);
    expect(read(clone, 'new.txt')).toBe('new\n');
    expect(status(clone)).toBe('');
  });

  it('makes a merge commit with the base and the sha as parents when the base moved on', async () => {
    const { clone } = makeRepo();
    const sha = branchWith(clone, 'countersign/a', { 'mine.txt': 'mine\n' });
    const moved = commitFiles(clone, { 'theirs.txt': 'theirs\n' });
    const result = await mergeExactly(clone, 'main', { branch: 'countersign/a', sha, message: 'Merge a' });
    expect(result).toMatchObject({ outcome: 'merged', fastForward: false });
    const commit = rev(clone, 'main');
    expect(result).toMatchObject({ commit });
    expect(parents(clone, commit)).toEqual([moved, sha]);
    expect(setupGit(clone, 'log', '-1', '--format=%an|%s', commit).trim()).toBe('Countersign|Merge a');
    expect(read(clone, 'mine.txt')).toBe('mine\n');
    expect(read(clone, 'theirs.txt')).toBe('theirs\n');
    expect(status(clone)).toBe('');
  });

  it('reports conflicting files and changes nothing: base, files, worktrees', async () => {
    const { clone } = makeRepo();
    const sha = branchWith(clone, 'countersign/a', { 'README.md': 'mine\n', 'only-mine.txt': 'x\n' });
    const before = commitFiles(clone, { 'README.md': 'theirs\n' });
    const result = await mergeExactly(clone, 'main', { branch: 'countersign/a', sha, message: 'm' });
    expect(result).toEqual({ outcome: 'conflict', files: ['README.md'] });
    expect(rev(clone, 'main')).toBe(before);
    expect(read(clone, 'README.md')).toBe('theirs\n');
    expect(existsSync(path.join(clone, 'only-mine.txt'))).toBe(false);
    expect(status(clone)).toBe('');
    expect(setupGit(clone, 'worktree', 'list', '--porcelain').match(/^worktree /gm)).toHaveLength(1);
  });

  it('refuses a branch that moved past the shown sha, changing nothing', async () => {
    const { clone } = makeRepo();
    const sha = branchWith(clone, 'countersign/a', { 'a.txt': 'a\n' });
    setupGit(clone, 'checkout', '-q', 'countersign/a');
    const later = commitFiles(clone, { 'b.txt': 'b\n' });
    setupGit(clone, 'checkout', '-q', 'main');
    const before = rev(clone, 'main');
    expect(await mergeExactly(clone, 'main', { branch: 'countersign/a', sha, message: 'm' })).toEqual({
      outcome: 'moved',
      tip: later,
    });
    setupGit(clone, 'branch', '-q', '-D', 'countersign/a');
    expect(await mergeExactly(clone, 'main', { branch: 'countersign/a', sha, message: 'm' })).toEqual({
      outcome: 'moved',
      tip: undefined,
    });
    expect(rev(clone, 'main')).toBe(before);
  });

  it('is exactly-once: a retry finds the sha in the base and makes no second commit', async () => {
    const { clone } = makeRepo();
    const sha = branchWith(clone, 'countersign/a', { 'mine.txt': 'mine\n' });
    commitFiles(clone, { 'theirs.txt': 'theirs\n' });
    const change = { branch: 'countersign/a', sha, message: 'm' };
    const first = await mergeExactly(clone, 'main', change);
    const count = commitCount(clone, 'main');
    const tip = rev(clone, 'main');
    expect(first).toMatchObject({ outcome: 'merged', commit: tip });
    expect(await mergeExactly(clone, 'main', change)).toEqual({ outcome: 'already-merged', commit: tip });
    // After a crash the worktree and branch may be gone already: still found in the base.
    setupGit(clone, 'branch', '-q', '-D', 'countersign/a');
    expect(await mergeExactly(clone, 'main', change)).toEqual({ outcome: 'already-merged', commit: tip });
    expect(commitCount(clone, 'main')).toBe(count);
  });

  it('refuses when the checked-out base has uncommitted changes to tracked files, changing nothing', async () => {
    const { clone } = makeRepo();
    const sha = branchWith(clone, 'countersign/a', { 'new.txt': 'new\n' });
    const before = rev(clone, 'main');
    writeFileSync(path.join(clone, 'README.md'), 'local edit\n');
    expect(await mergeExactly(clone, 'main', { branch: 'countersign/a', sha, message: 'm' })).toEqual({
      outcome: 'dirty',
      files: ['README.md'],
    });
    expect(rev(clone, 'main')).toBe(before);
    expect(read(clone, 'README.md')).toBe('local edit\n');
    expect(existsSync(path.join(clone, 'new.txt'))).toBe(false);
  });

  it('refuses when an untracked file sits where the merge would write one, changing nothing', async () => {
    const { clone } = makeRepo();
    const sha = branchWith(clone, 'countersign/a', { 'new.txt': 'new\n' });
    const before = rev(clone, 'main');
    writeFileSync(path.join(clone, 'new.txt'), 'mine, untracked\n');
    expect(await mergeExactly(clone, 'main', { branch: 'countersign/a', sha, message: 'm' })).toEqual({
      outcome: 'dirty',
      files: ['new.txt'],
    });
    expect(rev(clone, 'main')).toBe(before);
    expect(read(clone, 'new.txt')).toBe('mine, untracked\n');
  });

  it('brings along another worktree that has the base checked out, and leaves the clone alone', async () => {
    const { dir, clone } = makeRepo();
    const sha = branchWith(clone, 'countersign/a', { 'new.txt': 'new\n' });
    setupGit(clone, 'checkout', '-q', '-b', 'elsewhere');
    const other = path.join(dir, 'main-worktree');
    setupGit(clone, 'worktree', 'add', '-q', other, 'main');
    const result = await mergeExactly(clone, 'main', { branch: 'countersign/a', sha, message: 'm' });
    expect(result).toEqual({ outcome: 'merged', commit: sha, fastForward: true });
    expect(read(other, 'new.txt')).toBe('new\n');
    expect(status(other)).toBe('');
    expect(existsSync(path.join(clone, 'new.txt'))).toBe(false);
    expect(status(clone)).toBe('');
  });

  it('lands concurrent merges into one repository one after the other, in order, losing none', async () => {
    const { clone } = makeRepo();
    const names = ['a', 'b', 'c', 'd'];
    const shas = names.map((name) => branchWith(clone, `countersign/${name}`, { [`${name}.txt`]: `${name}\n` }));
    const results = await Promise.all(
      names.map((name, i) =>
        mergeExactly(clone, 'main', { branch: `countersign/${name}`, sha: shas[i]!, message: `merge ${name}` }),
      ),
    );
    expect(results.map((r) => r.outcome)).toEqual(['merged', 'merged', 'merged', 'merged']);
    expect(results.map((r) => 'fastForward' in r && r.fastForward)).toEqual([true, false, false, false]);
    // Each merge commit has the one before it as first parent: a straight line of merges, no commit lost.
    for (let i = 1; i < names.length; i++) {
      const previous = results[i - 1]!;
      const current = results[i]!;
      expect('commit' in current && parents(clone, current.commit)).toEqual([
        'commit' in previous && previous.commit,
        shas[i],
      ]);
    }
    expect(rev(clone, 'main')).toBe('commit' in results[3]! && results[3].commit);
    expect(commitCount(clone, 'main')).toBe(1 + 4 + 3);
    expect(names.map((name) => read(clone, `${name}.txt`)).join('')).toBe('a\nb\nc\nd\n');
    expect(status(clone)).toBe('');
  });

  it('keeps every merge when two processes merge into one repository at once (compare-and-swap)', async () => {
    const { clone } = makeRepo();
    // A second copy of the module has its own queue: as another worker process would.
    vi.resetModules();
    const other = (await import('../../src/repos/merge.ts')).mergeExactly;
    expect(other).not.toBe(mergeExactly);
    const names = ['a', 'b', 'c', 'd', 'e', 'f'];
    const shas = names.map((name) => branchWith(clone, `countersign/${name}`, { [`${name}.txt`]: `${name}\n` }));
    // Only refs here: a checkout of the base is followed by one process at a time (see above).
    setupGit(clone, 'checkout', '-q', '-b', 'elsewhere');
    const results = await Promise.all(
      names.map((name, i) =>
        (i % 2 ? other : mergeExactly)(clone, 'main', {
          branch: `countersign/${name}`,
          sha: shas[i]!,
          message: `merge ${name}`,
        }),
      ),
    );
    expect(results.map((r) => r.outcome)).toEqual(names.map(() => 'merged'));
    for (const sha of shas) expect(setupGit(clone, 'merge-base', '--is-ancestor', sha, 'main')).toBe('');
    expect(commitCount(clone, 'main')).toBe(1 + names.length + (names.length - 1));
  });

  it('refuses a base or branch name that git could take for an option', async () => {
    const { clone } = makeRepo();
    const sha = rev(clone, 'main');
    await expect(mergeExactly(clone, '--force', { branch: 'main', sha, message: 'm' })).rejects.toThrow(
      /not a branch name/,
    );
    await expect(mergeExactly(clone, 'main', { branch: 'x', sha: 'main', message: 'm' })).rejects.toThrow(
      /full commit id/,
    );
  });

  it('runs none of a hostile repository’s programs, merging or finding a conflict', async () => {
    const { dir, clone } = makeRepo();
    const clean = branchWith(clone, 'countersign/a', { 'a.txt': 'a\n' });
    const conflicting = branchWith(clone, 'countersign/b', { 'README.md': 'mine\n' });
    commitFiles(clone, { 'README.md': 'theirs\n' });
    const { pwned } = makeHostile(dir, clone);
    expect(await mergeExactly(clone, 'main', { branch: 'countersign/a', sha: clean, message: 'm' })).toMatchObject({
      outcome: 'merged',
      fastForward: false,
    });
    expect(await mergeExactly(clone, 'main', { branch: 'countersign/b', sha: conflicting, message: 'm' })).toEqual({
      outcome: 'conflict',
      files: ['README.md'],
    });
    expect(readdirSync(pwned)).toEqual([]);
  });
});

describe('pushBase', () => {
  function withRemote() {
    const made = makeRepo();
    const remote = path.join(made.dir, 'remote.git');
    setupGit(made.dir, 'init', '-q', '--bare', '-b', 'main', remote);
    setupGit(made.clone, 'remote', 'add', 'origin', remote);
    return { ...made, remote };
  }

  it('pushes the base to a local bare remote', async () => {
    const { clone, remote } = withRemote();
    commitFiles(clone, { 'a.txt': 'a\n' });
    expect(await pushBase(clone, 'origin', 'main')).toEqual({ ok: true });
    expect(setupGit(remote, 'rev-parse', 'refs/heads/main').trim()).toBe(rev(clone, 'main'));
  });

  it('reports a push the remote refuses (it moved on) and never forces it', async () => {
    const { dir, clone, remote } = withRemote();
    expect(await pushBase(clone, 'origin', 'main')).toEqual({ ok: true });
    const other = path.join(dir, 'other');
    setupGit(dir, 'clone', '-q', remote, other);
    commitFiles(other, { 'theirs.txt': 'theirs\n' });
    setupGit(other, 'push', '-q', 'origin', 'main');
    const theirs = rev(other, 'main');
    commitFiles(clone, { 'mine.txt': 'mine\n' });
    const result = await pushBase(clone, 'origin', 'main');
    expect(result).toMatchObject({ ok: false, error: expect.stringMatching(/rejected|fetch first|non-fast-forward/) });
    expect(setupGit(remote, 'rev-parse', 'refs/heads/main').trim()).toBe(theirs);
  });

  it('keeps a password in the remote URL out of the error', async () => {
    const { clone } = makeRepo();
    const result = await pushBase(clone, 'https://user:hunter2@127.0.0.1:9/repo.git', 'main');
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).not.toContain('hunter2');
  });

  it('refuses a remote that git could take for an option', async () => {
    const { dir, clone } = makeRepo();
    const marker = path.join(dir, 'ran');
    const result = await pushBase(clone, `--receive-pack=touch ${marker}`, 'main');
    expect(result).toMatchObject({ ok: false });
    expect(existsSync(marker)).toBe(false);
  });
});
