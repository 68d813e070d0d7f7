import path from 'node:path';
import { z } from 'zod';
import { branchTip } from './changes.ts';
import { git, GitError } from './git.ts';

/**
 * Landing an approved change on the base branch: exactly the commit the card showed, never forced,
 * never rewriting history, and exactly once. The base moves only by a compare-and-swap
 * (`update-ref <new> <old>`), so a merge computed against an old tip can never land; and a retry
 * after a crash finds the commit already in the base and does nothing.
 */

export type MergeResult =
  /** The base now points at `commit` (=== the change's sha when fast-forwarded). */
  | { outcome: 'merged'; commit: string; fastForward: boolean }
  /** The change was already in the base (a retry after a crash): nothing done. `commit`: the base's tip. */
  | { outcome: 'already-merged'; commit: string }
  /** The change conflicts with the base in these files: nothing changed. */
  | { outcome: 'conflict'; files: string[] }
  /** The change's branch no longer points at its sha: nothing changed. */
  | { outcome: 'moved'; tip: string | undefined }
  /**
   * The base is checked out with uncommitted changes to tracked files (or untracked files where
   * the merge would write): nothing changed.
   */
  | { outcome: 'dirty'; files: string[] };

const Change = z.object({
  branch: z.string().min(1),
  sha: z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/, 'not a full commit id'),
  message: z.string(),
});

/** How often the base may move under a merge before it gives up. */
const MAX_ATTEMPTS = 5;

/** The merge in flight per repository: merges into one clone run one after another. */
const inFlight = new Map<string, Promise<unknown>>();

function serialised<T>(repoPath: string, work: () => Promise<T>): Promise<T> {
  // Keyed synchronously, so merges run in the order they were asked for.
  const key = path.resolve(repoPath);
  const previous = inFlight.get(key) ?? Promise.resolve();
  const run = previous.then(work, work);
  const tail = run.catch(() => undefined);
  inFlight.set(key, tail);
  void tail.then(() => {
    if (inFlight.get(key) === tail) inFlight.delete(key);
  });
  return run;
}

/** A branch name git accepts (and not one it could take for an option). */
async function checkBranchName(repoPath: string, name: string): Promise<string> {
  if (name.startsWith('-')) throw new Error(`not a branch name: ${name}`);
  await git(repoPath, ['check-ref-format', `refs/heads/${name}`]).catch(() => {
    throw new Error(`not a branch name: ${name}`);
  });
  return name;
}

const nulList = (stdout: string) => stdout.split('\0').filter((s) => s !== '');

async function exists(repoPath: string, sha: string): Promise<boolean> {
  return git(repoPath, ['cat-file', '-e', `${sha}^{commit}`]).then(
    () => true,
    () => false,
  );
}

/**
 * Whether `ancestor` is reachable from `descendant`. Not `merge-base --is-ancestor`: its "no" is
 * exit 1, which git.ts reports like any failure; an empty `rev-list` answers with exit 0.
 */
async function isAncestor(repoPath: string, ancestor: string, descendant: string): Promise<boolean> {
  const { stdout } = await git(repoPath, ['rev-list', '-n', '1', `${descendant}..${ancestor}`, '--']);
  return stdout.trim() === '';
}

/** The working trees (the clone's own, or linked ones) that have `base` checked out. */
async function checkouts(repoPath: string, base: string): Promise<string[]> {
  const { stdout } = await git(repoPath, ['worktree', 'list', '--porcelain', '-z']);
  const found: string[] = [];
  // Records are attribute lines ending in NUL, separated by an empty one.
  for (const record of stdout.split('\0\0')) {
    const lines = record.split('\0');
    const dir = lines.find((l) => l.startsWith('worktree '))?.slice('worktree '.length);
    const held = lines.includes(`branch refs/heads/${base}`) && !lines.some((l) => l.startsWith('prunable'));
    if (dir && held) found.push(dir);
  }
  return found;
}

/** Tracked files with uncommitted changes (staged or not) in a working tree. */
async function dirtyFiles(checkout: string): Promise<string[]> {
  const { stdout } = await git(checkout, ['status', '--porcelain=v1', '-z', '--untracked-files=no', '--no-renames']);
  return nulList(stdout).map((entry) => entry.slice(3));
}

/**
 * Files that keep the working tree from following the base from `from` to `to`, found by a dry run
 * of the very `read-tree` that will move it; [] when it can follow.
 */
async function blockers(checkout: string, from: string, to: string): Promise<string[] | undefined> {
  const ok = await git(checkout, ['read-tree', '-m', '-u', '-n', from, to]).then(
    () => true,
    () => false,
  );
  if (ok) return undefined;
  const changed = nulList((await git(checkout, ['diff', '--name-only', '-z', '--no-renames', from, to, '--'])).stdout);
  const tracked = new Set(nulList((await git(checkout, ['ls-files', '-z'])).stdout));
  return changed.filter((file) => !tracked.has(file));
}

/** The conflicted paths of a merge-tree that found conflicts (exit 1: the tree, then the paths). */
function conflictsOf(error: unknown): string[] | undefined {
  if (!(error instanceof GitError) || error.exitCode !== 1) return undefined;
  const [, ...files] = nulList(error.stdout);
  return files.length ? [...new Set(files)] : undefined;
}

/** A merge commit of `sha` into `baseTip` (parents in that order), or the files that conflict. */
async function mergeCommit(
  repoPath: string,
  baseTip: string,
  sha: string,
  message: string,
): Promise<{ commit: string } | { conflicts: string[] }> {
  let tree: string;
  try {
    const args = ['merge-tree', '--write-tree', '-z', '--name-only', '--no-messages', baseTip, sha];
    tree = nulList((await git(repoPath, args)).stdout)[0] ?? '';
  } catch (error) {
    const conflicts = conflictsOf(error);
    if (conflicts) return { conflicts };
    throw error;
  }
  const text = message.replace(/\0/g, '').trim() || `Merge ${sha}`;
  const { stdout } = await git(repoPath, ['commit-tree', '--no-gpg-sign', tree, '-p', baseTip, '-p', sha, '-m', text]);
  return { commit: stdout.trim() };
}

async function tipOf(repoPath: string, base: string): Promise<string> {
  const tip = await branchTip(repoPath, base);
  if (!tip) throw new Error(`the base branch ${base} does not exist`);
  return tip;
}

/** A ref another git holds locked says so on stderr: it is about to move (or just did). */
const LOCKED = /cannot lock ref|unable to create '.*\.lock'/i;

/**
 * Moves the base from `old` to `to` only if it still is at `old`; false when it moved (or another
 * process was moving it) meanwhile, so the caller starts over from the new tip.
 */
async function swap(repoPath: string, base: string, old: string, to: string, reason: string): Promise<boolean> {
  return git(repoPath, ['update-ref', '-m', reason, `refs/heads/${base}`, to, old]).then(
    () => true,
    async (error: unknown) => {
      const stderr = error instanceof Error && 'stderr' in error ? String(error.stderr) : '';
      if ((await tipOf(repoPath, base)) !== old) return false;
      if (!LOCKED.test(stderr)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
      return false;
    },
  );
}

type Attempt = MergeResult | { outcome: 'raced' };

async function attempt(repoPath: string, base: string, change: z.infer<typeof Change>): Promise<Attempt> {
  const old = await tipOf(repoPath, base);
  if ((await exists(repoPath, change.sha)) && (await isAncestor(repoPath, change.sha, old))) {
    return { outcome: 'already-merged', commit: old };
  }
  const tip = await branchTip(repoPath, change.branch);
  if (tip !== change.sha) return { outcome: 'moved', tip };
  const trees = await checkouts(repoPath, base);
  for (const checkout of trees) {
    const files = await dirtyFiles(checkout);
    if (files.length) return { outcome: 'dirty', files };
  }
  const fastForward = await isAncestor(repoPath, old, change.sha);
  const made = fastForward ? { commit: change.sha } : await mergeCommit(repoPath, old, change.sha, change.message);
  if ('conflicts' in made) return { outcome: 'conflict', files: made.conflicts };
  for (const checkout of trees) {
    const files = await blockers(checkout, old, made.commit);
    if (files) return { outcome: 'dirty', files };
  }
  if (!(await swap(repoPath, base, old, made.commit, `countersign: merge ${change.branch} (${change.sha})`))) {
    return { outcome: 'raced' };
  }
  // The checked-out files follow the branch (what `git merge` would have done there).
  for (const checkout of trees) await git(checkout, ['read-tree', '-m', '-u', old, made.commit]);
  return { outcome: 'merged', commit: made.commit, fastForward };
}

/**
 * Lands exactly `change.sha` on `base`: fast-forward when it can, else a merge commit; never forces,
 * never rewrites history; exactly-once (a retry finds sha in base). Serialised per repository in
 * this process; across processes the compare-and-swap on the base keeps it right.
 */
export async function mergeExactly(
  repoPath: string,
  base: string,
  change: { branch: string; sha: string; message: string },
): Promise<MergeResult> {
  const parsed = Change.parse(change);
  return serialised(repoPath, async () => {
    await checkBranchName(repoPath, base);
    await checkBranchName(repoPath, parsed.branch);
    for (let i = 0; i < MAX_ATTEMPTS; i++) {
      const result = await attempt(repoPath, base, parsed);
      if (result.outcome !== 'raced') return result;
    }
    throw new Error(`${base} kept moving during the merge (${MAX_ATTEMPTS} tries); try again`);
  });
}

/** The last lines of git's complaint, with any `user:password@` in a URL removed. */
function pushError(error: unknown): string {
  const stderr =
    error instanceof Error && 'stderr' in error && typeof error.stderr === 'string' ? error.stderr : String(error);
  const lines = stderr
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l !== '' && !l.startsWith('hint:'));
  const text = lines.length ? lines.slice(-4).join('\n') : error instanceof Error ? error.message : String(error);
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1');
}

/**
 * Pushes the base branch to `remote` (a remote name or a URL the operator configured), as a plain
 * fast-forward push: never forced, so a remote that moved refuses it.
 */
export async function pushBase(
  repoPath: string,
  remote: string,
  base: string,
): Promise<{ ok: true } | { ok: false; error: string }> {
  if (remote === '' || remote.startsWith('-') || remote.includes('\0')) {
    return { ok: false, error: `not a remote: ${remote}` };
  }
  await checkBranchName(repoPath, base);
  const refspec = `refs/heads/${base}:refs/heads/${base}`;
  // The operator's ssh command, if they set one (never the repository's core.sshCommand).
  const ssh = process.env.GIT_SSH_COMMAND ? { GIT_SSH_COMMAND: process.env.GIT_SSH_COMMAND } : {};
  return git(repoPath, ['push', '--quiet', '--', remote, refspec], ssh).then(
    () => ({ ok: true as const }),
    (error: unknown) => ({ ok: false as const, error: pushError(error) }),
  );
}
