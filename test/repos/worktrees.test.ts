import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { git } from '../../src/repos/git.ts';
import { setupGit } from './git-fixture.ts';
import { shortConversationId, WorktreeLimitError, Worktrees, type Repo } from '../../src/repos/worktrees.ts';

/** A throw-away repository with one commit on `main`. */
function makeRepo(): { dir: string; repo: Repo; root: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'cs-repo-'));
  const clone = path.join(dir, 'clone');
  mkdirSync(clone);
  setupGit(clone, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(clone, 'README.md'), '# demo\n');
  setupGit(clone, 'add', 'README.md');
  setupGit(clone, 'commit', '-q', '-m', 'first');
  return { dir, repo: { name: 'demo', path: clone }, root: path.join(dir, 'worktrees') };
}

const head = (repo: Repo, ref = 'main') => setupGit(repo.path, 'rev-parse', ref).trim();

describe('worktrees', () => {
  it('gives each conversation its own worktree and branch from the base, and finds it again', async () => {
    const { repo, root } = makeRepo();
    const worktrees = new Worktrees({ root, maxPerRepo: 5 });
    const a = await worktrees.open(repo, 'slack:T1:C1:1.0');
    const b = await worktrees.open(repo, 'slack:T1:C1:2.0');
    expect(a.branch).toBe(`countersign/${shortConversationId('slack:T1:C1:1.0')}`);
    expect(a.path).not.toBe(b.path);
    expect(a.baseCommit).toBe(head(repo));
    expect(existsSync(path.join(a.path, 'README.md'))).toBe(true);
    expect(await worktrees.open(repo, 'slack:T1:C1:1.0')).toEqual(a);
    expect((await worktrees.list(repo)).map((w) => w.conversationId).sort()).toEqual([
      'slack:T1:C1:1.0',
      'slack:T1:C1:2.0',
    ]);
    // The marker sits beside the worktree: never part of what is committed there.
    expect(readdirSync(a.path)).not.toContain('.countersign-worktree.json');
  });

  it('refuses a worktree past the per-repository limit, saying what to do', async () => {
    const { repo, root } = makeRepo();
    const worktrees = new Worktrees({ root, maxPerRepo: 1 });
    await worktrees.open(repo, 'one');
    await expect(worktrees.open(repo, 'two')).rejects.toThrow(WorktreeLimitError);
    await expect(worktrees.open(repo, 'two')).rejects.toThrow(/REPO_WORKTREES_MAX=1.*merge or discard/);
  });

  it('removes a worktree and its branch and leaves the base untouched; sweeps those of dead conversations', async () => {
    const { repo, root } = makeRepo();
    const before = head(repo);
    const worktrees = new Worktrees({ root, maxPerRepo: 5 });
    const kept = await worktrees.open(repo, 'live');
    const gone = await worktrees.open(repo, 'expired');
    writeFileSync(path.join(gone.path, 'change.txt'), 'x\n');
    await git(gone.path, ['add', 'change.txt']);
    await git(gone.path, ['commit', '-q', '-m', 'a change']);
    expect(await worktrees.sweep(repo, async (id) => id === 'live')).toBe(1);
    expect(existsSync(gone.path)).toBe(false);
    expect(setupGit(repo.path, 'branch', '--list', gone.branch).trim()).toBe('');
    expect(head(repo)).toBe(before);
    expect((await worktrees.list(repo)).map((w) => w.conversationId)).toEqual(['live']);
    await worktrees.remove(repo, kept);
    expect(await worktrees.list(repo)).toEqual([]);
  });
});

describe('git on a hostile repository', () => {
  /**
   * A clone whose own configuration names programs everywhere git would start one: an fsmonitor,
   * a hooks directory (post-checkout, pre-commit), a filter every file goes through, a diff driver.
   * Each program leaves a file in `pwned/` when it runs.
   */
  function hostileRepo() {
    const made = makeRepo();
    const pwned = path.join(made.dir, 'pwned');
    mkdirSync(pwned);
    const script = (name: string) => {
      const file = path.join(made.dir, `${name}.sh`);
      writeFileSync(file, `#!/bin/sh\ntouch '${path.join(pwned, name)}'\ncat\n`);
      chmodSync(file, 0o755);
      return file;
    };
    const hooks = path.join(made.dir, 'hooks');
    mkdirSync(hooks);
    for (const hook of ['post-checkout', 'pre-commit', 'post-commit']) {
      writeFileSync(path.join(hooks, hook), `#!/bin/sh\ntouch '${path.join(pwned, hook)}'\n`);
      chmodSync(path.join(hooks, hook), 0o755);
    }
    writeFileSync(path.join(made.repo.path, '.gitattributes'), '* filter=evil diff=evil\n');
    setupGit(made.repo.path, 'add', '.gitattributes');
    setupGit(made.repo.path, 'commit', '-q', '-m', 'attributes');
    const config = (key: string, value: string) => setupGit(made.repo.path, 'config', key, value);
    config('core.fsmonitor', script('fsmonitor'));
    config('core.hooksPath', hooks);
    config('filter.evil.clean', script('clean'));
    config('filter.evil.smudge', script('smudge'));
    config('diff.evil.textconv', script('textconv'));
    return { ...made, pwned };
  }

  it('would run them with plain git (the test is real)', () => {
    const { repo, pwned } = hostileRepo();
    writeFileSync(path.join(repo.path, 'README.md'), '# changed\n');
    setupGit(repo.path, 'status', '--short');
    setupGit(repo.path, 'add', 'README.md');
    expect(readdirSync(pwned).sort()).toEqual(expect.arrayContaining(['clean', 'fsmonitor']));
  });

  it('runs none of them: worktree, status, add, commit, diff and removal', async () => {
    const { repo, root, pwned } = hostileRepo();
    const worktrees = new Worktrees({ root, maxPerRepo: 5 });
    const worktree = await worktrees.open(repo, 'hostile');
    writeFileSync(path.join(worktree.path, 'README.md'), '# changed\n');
    await git(worktree.path, ['status', '--short']);
    await git(worktree.path, ['add', '-A']);
    await git(worktree.path, ['commit', '-q', '-m', 'change']);
    await git(worktree.path, ['diff', `${worktree.baseCommit}..HEAD`]);
    await git(repo.path, ['status', '--short']);
    await worktrees.remove(repo, worktree);
    expect(readdirSync(pwned)).toEqual([]);
  });
});
