import { z } from 'zod';
import { git } from './git.ts';
import { INBOX_DIR } from '../core/inbox.ts';

/**
 * What a conversation changed in its worktree: the commit the bot makes of it, and the files and
 * diff the change card shows. Paths are read from `-z` output, so spaces, newlines and any unicode
 * in a name come through as they are.
 */

export interface ChangedFile {
  path: string;
  /** The path before a rename. */
  oldPath?: string;
  status: 'added' | 'modified' | 'deleted' | 'renamed' | 'type-changed';
  /** Lines added and removed; null for a binary file. */
  added: number | null;
  removed: number | null;
  binary: boolean;
  /** Git modes, e.g. '100644', '100755', '120000'; absent on the side where the file is not. */
  mode?: string;
  oldMode?: string;
  /** The new mode is 100755. */
  executable: boolean;
  /** The new mode is 120000. */
  symlink: boolean;
  /** Both modes present and different. */
  modeChanged: boolean;
}

/** A commit message's summary may be at most this long (it comes from a model). */
const MAX_MESSAGE = 4_000;
const DEFAULT_MESSAGE = 'Changes by Countersign';

/** A revision named on git's command line: never one git could take for an option. */
const Revision = z
  .string()
  .min(1)
  .refine((r) => !r.startsWith('-') && !/[\0\s]/.test(r), 'not a revision');
const Sha = z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/, 'not a full commit id');

const CommitOptions = z.object({ message: z.string(), trailers: z.array(z.string()) });

/** The model's summary, made safe for `-m`: no NUL, plain newlines, trimmed, capped. */
function commitMessage(message: string, trailers: readonly string[]): string {
  const summary = [...message.replace(/\0/g, '').replace(/\r\n?/g, '\n').trim()].slice(0, MAX_MESSAGE).join('').trim();
  const lines = trailers.map(trailerLine);
  return [summary || DEFAULT_MESSAGE, ...(lines.length ? [lines.join('\n')] : [])].join('\n\n');
}

/** One `Key: value` trailer on one line: a requester's name cannot add lines to the message. */
function trailerLine(trailer: string): string {
  const line = trailer.replace(/[\0\r\n]+/g, ' ').trim();
  if (!/^[A-Za-z0-9-]+: \S/.test(line)) throw new Error(`not a commit trailer ("Key: value"): ${line}`);
  return line;
}

/**
 * Stages everything in the worktree (`git add -A`: untracked files too, `.gitignore` respected) and
 * commits it; undefined when nothing changed. Trailers are written into the message by us, not with
 * `--trailer`: that runs `git interpret-trailers`, which runs any `trailer.<key>.cmd` the
 * repository's configuration names.
 */
/**
 * Files people sent in the conversation, saved in the worktree under `inbox/<conversation>-<hash>/`
 * (src/files): never part of the change, whose merge would put a screenshot or a log in history.
 */
const RECEIVED_FILES = `:(top,exclude,glob)${INBOX_DIR}/*-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]/**`;

export async function commitWorktree(
  worktreePath: string,
  opts: { message: string; trailers: string[] },
): Promise<{ sha: string } | undefined> {
  const { message, trailers } = CommitOptions.parse(opts);
  const full = commitMessage(message, trailers);
  await git(worktreePath, ['add', '-A', '--', '.', RECEIVED_FILES]);
  const staged = await git(worktreePath, ['diff', '--cached', '--name-only', '-z']);
  if (staged.stdout === '') return undefined;
  // A repository may ask for signed commits; the bot has no key and gpg.program is fixed to `false`.
  await git(worktreePath, ['commit', '-q', '--no-gpg-sign', '--cleanup=whitespace', '-m', full]);
  return { sha: (await git(worktreePath, ['rev-parse', '--verify', 'HEAD^{commit}'])).stdout.trim() };
}

/**
 * Flags that keep a diff git's own plain one whatever the repository's configuration says (colour,
 * `diff.relative`, `diff.noprefix`, `diff.renames=copies`).
 */
const PLAIN = ['--no-color', '--no-relative', '--find-renames'];

function range(base: string, sha: string): string {
  return `${Revision.parse(base)}...${Sha.parse(sha)}`;
}

interface RawEntry {
  status: string;
  oldMode: string;
  mode: string;
  oldPath: string;
  path: string;
}

/** `git diff --raw -z`: `:oldmode newmode oldid newid STATUS\0path\0` (a rename: `\0src\0dst\0`). */
function parseRaw(stdout: string): RawEntry[] {
  const tokens = stdout.split('\0');
  const entries: RawEntry[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const header = tokens[i] ?? '';
    if (!header.startsWith(':')) continue;
    const [oldMode = '', mode = '', , , status = ''] = header.slice(1).split(' ');
    const twoPaths = status.startsWith('R') || status.startsWith('C');
    const oldPath = tokens[++i] ?? '';
    const newPath = twoPaths ? (tokens[++i] ?? '') : oldPath;
    entries.push({ status: status.charAt(0), oldMode, mode, oldPath, path: newPath });
  }
  return entries;
}

/** `git diff --numstat -z`: `added\tremoved\tpath\0`, a rename `added\tremoved\t\0src\0dst\0`; `-` when binary. */
function parseNumstat(stdout: string): Map<string, { added: number | null; removed: number | null }> {
  const tokens = stdout.split('\0');
  const counts = new Map<string, { added: number | null; removed: number | null }>();
  for (let i = 0; i < tokens.length; i++) {
    const record = tokens[i] ?? '';
    const [added, removed, single] = record.split('\t');
    if (added === undefined || removed === undefined || single === undefined) continue;
    const oldPath = single === '' ? (tokens[++i] ?? '') : single;
    const newPath = single === '' ? (tokens[++i] ?? '') : single;
    const count = (n: string) => (n === '-' ? null : Number(n));
    counts.set(`${oldPath}\0${newPath}`, { added: count(added), removed: count(removed) });
  }
  return counts;
}

const STATUS: Record<string, ChangedFile['status']> = {
  A: 'added',
  C: 'added',
  M: 'modified',
  D: 'deleted',
  R: 'renamed',
  T: 'type-changed',
};

const ABSENT = '000000';

function toChangedFile(
  entry: RawEntry,
  counts: { added: number | null; removed: number | null } | undefined,
): ChangedFile {
  const status = STATUS[entry.status] ?? 'modified';
  const mode = entry.mode === ABSENT ? undefined : entry.mode;
  const oldMode = entry.oldMode === ABSENT ? undefined : entry.oldMode;
  const binary = counts !== undefined && counts.added === null;
  return {
    path: entry.path,
    ...(status === 'renamed' ? { oldPath: entry.oldPath } : {}),
    status,
    added: binary ? null : (counts?.added ?? 0),
    removed: binary ? null : (counts?.removed ?? 0),
    binary,
    ...(mode ? { mode } : {}),
    ...(oldMode ? { oldMode } : {}),
    executable: mode === '100755',
    symlink: mode === '120000',
    modeChanged: mode !== undefined && oldMode !== undefined && mode !== oldMode,
  };
}

/** Files changed by `sha` relative to its merge base with `base` (three dots: what the branch did). */
export async function changedFiles(repoPath: string, base: string, sha: string): Promise<ChangedFile[]> {
  const spec = range(base, sha);
  const raw = await git(repoPath, ['diff', ...PLAIN, '--raw', '-z', spec, '--']);
  const numstat = await git(repoPath, ['diff', ...PLAIN, '--numstat', '-z', spec, '--']);
  const counts = parseNumstat(numstat.stdout);
  return parseRaw(raw.stdout).map((entry) => toChangedFile(entry, counts.get(`${entry.oldPath}\0${entry.path}`)));
}

/** The change's unified diff (same range) as text; a binary file is a "Binary files … differ" line. */
export async function changeDiff(repoPath: string, base: string, sha: string): Promise<string> {
  const args = ['diff', ...PLAIN, '--src-prefix=a/', '--dst-prefix=b/', range(base, sha), '--'];
  return (await git(repoPath, args)).stdout;
}

/**
 * The files of `commit` as git holds them: path → mode (`100644`, `100755`, `120000`, `160000`) and
 * object id. The taint's baseline of a worktree is its clean checkout, compared file by file with
 * what is on disk by content, never through the index (which a program could tell to look away).
 */
export async function checkoutTree(
  worktreePath: string,
  commit: string,
): Promise<Map<string, { mode: string; blob: string }>> {
  const { stdout } = await git(worktreePath, ['ls-tree', '-r', '-z', '--full-tree', Sha.parse(commit)]);
  const tree = new Map<string, { mode: string; blob: string }>();
  for (const record of splitZ(stdout)) {
    const tab = record.indexOf('\t');
    const [mode = '', , blob = ''] = record.slice(0, tab).split(' ');
    tree.set(record.slice(tab + 1), { mode, blob });
  }
  return tree;
}

/**
 * The files of a worktree its last commit does not hold: untracked, ignored (received files under
 * inbox/ among them) and changed-but-uncommitted. A change card names them: they are in the
 * worktree a program ran in, but not in what would merge.
 */
export async function filesNotCommitted(worktreePath: string): Promise<string[]> {
  const changed = await git(worktreePath, [
    'diff',
    '--no-ext-diff',
    '--no-relative',
    '--name-only',
    '-z',
    'HEAD',
    '--',
  ]);
  const others = await git(worktreePath, ['ls-files', '--others', '-z', '--', ':/']);
  return [...new Set([...splitZ(changed.stdout), ...splitZ(others.stdout)])].sort();
}

const splitZ = (stdout: string) => stdout.split('\0').filter(Boolean);

/** The commit a branch points at, or undefined if the branch does not exist. */
export async function branchTip(repoPath: string, branch: string): Promise<string | undefined> {
  const ref = `refs/heads/${Revision.parse(branch)}`;
  // for-each-ref also matches `ref/…` and globs: only the exact name counts.
  const { stdout } = await git(repoPath, ['for-each-ref', '--format=%(refname)%00%(objectname)', ref]);
  for (const line of stdout.split('\n')) {
    const [name, id] = line.split('\0');
    if (name === ref && id) return id;
  }
  return undefined;
}
