import { git } from './git.ts';
import type { RepoConfig } from './repos-config.ts';

/**
 * What stops a configured repository from being worked on, found at start rather than at the first
 * `/code` (where git's raw error would be all a person sees): a path that is not a git clone, a
 * `base` branch the clone does not have, no `base` and no branch checked out to default to, a
 * `push` remote the clone does not name. Every problem of every repository, one line each, prefixed
 * with `source` (`REPOS`, or the REPOS_FILE path).
 */
export async function checkRepos(repos: readonly RepoConfig[], source: string): Promise<string[]> {
  const problems: string[] = [];
  for (const repo of repos) {
    for (const problem of await problemsOf(repo)) problems.push(`${source}: ${repo.name}: ${problem}`);
  }
  return problems;
}

async function problemsOf(repo: RepoConfig): Promise<string[]> {
  const clone = await git(repo.path, ['rev-parse', '--git-dir']).then(
    () => true,
    () => false,
  );
  if (!clone) return [`${repo.path} is not a git clone (or cannot be read)`];
  const problems: string[] = [];
  if (repo.base) {
    if (
      !(await succeeds(repo.path, [
        'rev-parse',
        '--verify',
        '--quiet',
        '--end-of-options',
        `refs/heads/${repo.base}^{commit}`,
      ]))
    )
      problems.push(`base: there is no branch "${repo.base}" in ${repo.path}${await branchesHint(repo.path)}`);
  } else if (!(await succeeds(repo.path, ['symbolic-ref', '--quiet', '--short', 'HEAD']))) {
    problems.push(`${repo.path} has no branch checked out to default to: set its base (REPOS_FILE: base: main)`);
  }
  if (repo.push && !(await succeeds(repo.path, ['remote', 'get-url', '--end-of-options', repo.push])))
    problems.push(`push: there is no remote "${repo.push}" in ${repo.path} (git remote -v lists them)`);
  return problems;
}

function succeeds(cwd: string, args: string[]): Promise<boolean> {
  return git(cwd, args).then(
    () => true,
    () => false,
  );
}

/** The clone's first branches, for a refusal: what `base:` could say instead. */
async function branchesHint(cwd: string): Promise<string> {
  const { stdout } = await git(cwd, ['for-each-ref', '--count=10', '--format=%(refname:short)', 'refs/heads/']).catch(
    () => ({ stdout: '' }),
  );
  const names = stdout.split('\n').filter(Boolean);
  return names.length ? ` (its branches: ${names.join(', ')})` : ' (it has no branches yet)';
}
