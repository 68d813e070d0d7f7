import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Setup git: plain, but with no system or global configuration of this machine. */
export const setupGit = (cwd: string, ...args: string[]): string =>
  execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 'Test',
      GIT_AUTHOR_EMAIL: 'test@localhost',
      GIT_COMMITTER_NAME: 'Test',
      GIT_COMMITTER_EMAIL: 'test@localhost',
    },
  });

/** A throw-away directory holding `clone`, a repository with one commit (README.md) on `main`. */
export function makeRepo(): { dir: string; clone: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'cs-repo-'));
  const clone = path.join(dir, 'clone');
  mkdirSync(clone);
  setupGit(clone, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(clone, 'README.md'), '# demo\n');
  setupGit(clone, 'add', 'README.md');
  setupGit(clone, 'commit', '-q', '-m', 'first');
  return { dir, clone };
}

/** Writes `files` (path → content) in `cwd` and commits them with plain git; returns the commit. */
export function commitFiles(cwd: string, files: Record<string, string>, message = 'change'): string {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(cwd, name)), { recursive: true });
    writeFileSync(path.join(cwd, name), content);
  }
  setupGit(cwd, 'add', '-A');
  setupGit(cwd, 'commit', '-q', '-m', message);
  return rev(cwd, 'HEAD');
}

export const rev = (cwd: string, ref: string): string => setupGit(cwd, 'rev-parse', ref).trim();

/** Commits reachable from `ref`. */
export const commitCount = (cwd: string, ref: string): number =>
  Number(setupGit(cwd, 'rev-list', '--count', ref).trim());

/**
 * Makes the repository's own configuration name a program wherever git could start one: each
 * leaves a file in the returned `pwned` directory when it runs. `.gitattributes` (filter, diff
 * driver, merge driver on every file) is committed on the current branch.
 */
export function makeHostile(dir: string, clone: string): { pwned: string } {
  const pwned = path.join(dir, 'pwned');
  mkdirSync(pwned, { recursive: true });
  const script = (name: string, tail = 'cat') => {
    const file = path.join(dir, `${name}.sh`);
    writeFileSync(file, `#!/bin/sh\ntouch '${path.join(pwned, name)}'\n${tail}\n`);
    chmodSync(file, 0o755);
    return file;
  };
  // Committed first: plain git would already run the hooks below.
  writeFileSync(path.join(clone, '.gitattributes'), '* filter=evil diff=evil merge=evil\n');
  setupGit(clone, 'add', '.gitattributes');
  setupGit(clone, 'commit', '-q', '-m', 'attributes');
  const hooks = path.join(dir, 'hooks');
  mkdirSync(hooks, { recursive: true });
  const hookNames = ['pre-commit', 'prepare-commit-msg', 'commit-msg', 'post-commit', 'post-checkout', 'post-merge'];
  for (const hook of [...hookNames, 'pre-push', 'reference-transaction']) {
    for (const where of [hooks, path.join(clone, '.git', 'hooks')]) {
      writeFileSync(path.join(where, hook), `#!/bin/sh\ntouch '${path.join(pwned, hook)}'\n`);
      chmodSync(path.join(where, hook), 0o755);
    }
  }
  const config = (key: string, value: string) => setupGit(clone, 'config', key, value);
  config('core.fsmonitor', script('fsmonitor', 'exit 0'));
  config('core.hooksPath', hooks);
  config('filter.evil.clean', script('clean'));
  config('filter.evil.smudge', script('smudge'));
  config('diff.evil.textconv', script('textconv'));
  config('diff.evil.command', script('diff-command', 'exit 0'));
  config('diff.external', script('diff-external', 'exit 0'));
  config('merge.evil.driver', script('merge-driver', 'exit 0'));
  config('trailer.co-authored-by.cmd', script('trailer', 'exit 0'));
  config('color.ui', 'always');
  config('commit.gpgSign', 'true');
  config('gpg.program', script('gpg', 'exit 1'));
  return { pwned };
}
