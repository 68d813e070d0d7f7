import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readlink } from 'node:fs/promises';
import path from 'node:path';
import { INBOX_DIR } from '../core/inbox.ts';
import { git } from './git.ts';

/**
 * What a change holds, file by file, however it got there: each path where the worktree (on disk,
 * tracked or not) or the branch's tip differs from the commit the branch started from, with the
 * contents it has there — so content written by a tool, a program, the coding CLI (also one it
 * committed itself, or put on the branch with `update-ref`) or a file a person sent is seen alike.
 * A content is `<git mode> <git object id>` (or `deleted`), the same string for a file on disk and
 * for the committed blob it becomes, so committing content never makes it new.
 */

/** Each changed path and its contents (on disk, at the branch's tip) that the base does not have. */
export type ChangeContents = Map<string, Set<string>>;

const DELETED = 'deleted';

/** One side of a `git diff --raw`: its mode and object id as one content string. */
function contentOf(mode: string, id: string): string {
  return /^0+$/.test(mode) ? DELETED : `${mode} ${id}`;
}

interface RawSides {
  base: string;
  other: string;
}

/** `git diff --raw -z --no-renames`: `:oldmode newmode oldid newid STATUS\0path\0`, by path. */
function parseRaw(stdout: string): Map<string, RawSides> {
  const sides = new Map<string, RawSides>();
  const tokens = stdout.split('\0');
  for (let i = 0; i + 1 < tokens.length; i += 2) {
    const header = tokens[i] ?? '';
    if (!header.startsWith(':')) break;
    const [oldMode = '', mode = '', oldId = '', id = ''] = header.slice(1).split(' ');
    sides.set(tokens[i + 1] ?? '', { base: contentOf(oldMode, oldId), other: contentOf(mode, id) });
  }
  return sides;
}

const nulList = (stdout: string) => stdout.split('\0').filter(Boolean);

/** Flags that keep git's output its own plain one whatever the repository's configuration says. */
const RAW = ['diff', '--raw', '-z', '--no-renames', '--no-abbrev', '--no-relative', '--no-ext-diff', '--no-textconv'];

/**
 * The change's contents: `baseCommit` is where the branch left its base; `branch` the worktree's
 * own branch (read from the shared refs, so a tip moved without the worktree is seen).
 */
export async function changeContents(
  worktreePath: string,
  branch: string,
  baseCommit: string,
): Promise<ChangeContents> {
  const format = (await git(worktreePath, ['rev-parse', '--show-object-format'])).stdout.trim();
  const tip = await git(worktreePath, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`]).then(
    (out) => out.stdout.trim(),
    () => undefined,
  );
  const committed = tip ? parseRaw((await git(worktreePath, [...RAW, baseCommit, tip, '--'])).stdout) : new Map();
  // The working tree against the base, for the paths git tracks (its stat cache makes this cheap).
  const tracked = parseRaw((await git(worktreePath, [...RAW, baseCommit, '--'])).stdout);
  const untracked = nulList((await git(worktreePath, ['ls-files', '--others', '--exclude-standard', '-z'])).stdout);
  // Files people sent land here; a repository that ignores the folder must not hide them.
  const received = nulList((await git(worktreePath, ['ls-files', '--others', '-z', '--', `${INBOX_DIR}/`])).stdout);

  const paths = new Set<string>([...committed.keys(), ...tracked.keys(), ...untracked, ...received]);
  const contents: ChangeContents = new Map();
  for (const file of paths) {
    const base = committed.get(file)?.base ?? tracked.get(file)?.base ?? DELETED;
    const atTip = committed.get(file)?.other ?? base;
    const onDisk = await diskContent(worktreePath, file, format);
    const differing = new Set([onDisk, atTip].filter((c) => c !== base));
    if (differing.size > 0) contents.set(file, differing);
  }
  return contents;
}

/** What git would store for a file as it is on disk: its mode and object id. */
async function diskContent(root: string, file: string, format: string): Promise<string> {
  const full = path.join(root, file);
  const stat = await lstat(full).catch(() => undefined);
  if (!stat) return DELETED;
  const cached = statCache.get(full);
  const key = statKey(stat);
  if (cached?.key === key) return cached.content;
  let content: string;
  // A file or link the bot cannot read (a program made it so, or it went meanwhile) is named by its
  // stat: any change of it is new content.
  const unreadable = `unreadable-${key}`;
  if (stat.isSymbolicLink()) {
    const target = await readlink(full, { encoding: 'buffer' }).catch(() => undefined);
    content = `120000 ${target ? objectId(format, target) : unreadable}`;
  } else if (stat.isFile()) {
    const id = await fileObjectId(format, full, stat.size).catch(() => unreadable);
    content = `${stat.mode & 0o111 ? '100755' : '100644'} ${id}`;
  }
  // A folder where git saw a path: an embedded repository or a submodule, recorded as such.
  else content = `040000 ${stat.isDirectory() ? 'directory' : 'special'}`;
  remember(full, key, stat.ctimeMs, content);
  return content;
}

/** The object id git gives `bytes` as a blob. */
function objectId(format: string, bytes: Buffer): string {
  return createHash(hashName(format)).update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

async function fileObjectId(format: string, file: string, size: number): Promise<string> {
  const hash = createHash(hashName(format)).update(`blob ${size}\0`);
  let read = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    read += (chunk as Buffer).length;
  }
  // Changed while it was read: a content no earlier record can hold, so it is attributed.
  return read === size ? hash.digest('hex') : `changing-${hash.digest('hex')}`;
}

const hashName = (format: string) => (format === 'sha256' ? 'sha256' : 'sha1');

/**
 * A stat cache, as git's index keeps one: a file whose size, times, inode and mode are unchanged is
 * not read again. An entry whose file changed within the last second of being read is not trusted
 * (git's "racily clean" case: a write in the same timestamp tick leaves the times as they were).
 */
const statCache = new Map<string, { key: string; content: string }>();
const STAT_CACHE_MAX = 50_000;
const RACY_MS = 1000;

function statKey(stat: Awaited<ReturnType<typeof lstat>>): string {
  return `${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}:${stat.ino}:${stat.mode}`;
}

function remember(full: string, key: string, ctimeMs: number, content: string): void {
  if (Date.now() - ctimeMs < RACY_MS) {
    statCache.delete(full);
    return;
  }
  if (statCache.size >= STAT_CACHE_MAX) statCache.clear();
  statCache.set(full, { key, content });
}
