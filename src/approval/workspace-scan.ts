import { createHash } from 'node:crypto';
import { constants, type BigIntStats } from 'node:fs';
import { lstat, open, opendir, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * What is on disk in a workspace, file by file, as content hashes (the taint, docs/policy.md): a
 * file is `f:<sha256>` (`x:` when executable), a symbolic link `l:<sha256 of its target>` — never
 * followed, so a link cannot make the scan read or count anything outside the workspace — and any
 * other kind (a fifo, a socket, a device, a file the bot cannot read) `o:<kind>`. Folders are not
 * entries. Of the workspace's own `.git` folder only `config`, `hooks/` and `info/` are scanned (and
 * the same of each submodule's git folder under `.git/modules/`): what makes git run a program,
 * not the objects and index every git command rewrites. Whoever wrote a file — a tool, a received
 * message, a program, a coding CLI, an MCP server — it is in the scan: nothing has to report its
 * writes.
 *
 * A stat cache makes a rescan cheap, as git's index does: a file whose size, mtime, ctime and inode
 * are what they were when it was hashed is not read again. A rewrite that restores size and mtime
 * (`touch -d`) still changes the ctime, and a replacement by rename changes the inode. A file
 * hashed within `RACY_MS` of its last change is "racy" (the file system's clock is coarse: another
 * write in the same tick would leave the stat unchanged), so it is hashed again next time.
 */

/** The bounds of one scan: beyond them the scan stops and says it is incomplete (the taint fails closed). */
const SCAN_LIMITS = {
  /** Entries (files, links, others) one scan records. */
  files: 100_000,
  /** Folder depth below the root. */
  depth: 64,
} as const;

/** Hashes one process keeps (about 200 bytes each); past it the cache starts over. */
const CACHE_ENTRIES = 500_000;

/** Entries of one folder stat'ed and hashed at once. */
const PARALLEL = 32;

/** Files up to this size are read whole; larger ones are streamed. */
const READ_WHOLE_BYTES = 1 << 20;

/** What of a workspace's own `.git` folder is scanned: what makes git run a program. */
const GIT_SCANNED = ['config', 'hooks', 'info'] as const;

/** A hash is trusted from the cache only when the file had not changed for this long when it was hashed. */
const RACY_MS = 2_000;

/** One entry as the scan records it, and when the file last changed (to name the newest first). */
interface ScannedEntry {
  entry: string;
  /**
   * Git's object id of the same content (`blob <size>\0…`, sha1) for a file or a link: a worktree's
   * clean checkout is compared by it with the commit's tree, never through git's index, which a
   * program in the worktree could tell to ignore a file (`update-index --assume-unchanged`).
   */
  gitBlob?: string;
  changedMs: number;
}

export interface WorkspaceState {
  /** Workspace-relative paths with `/` separators → entry. */
  entries: Map<string, ScannedEntry>;
  /** False when a bound stopped the scan: what it did not see may differ from anything. */
  complete: boolean;
}

interface CachedHash {
  size: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
  mode: number;
  entry: string;
  gitBlob?: string;
}

/** Hashes by absolute path, with the stat they were made from. One per process; entries are re-checked on every use. */
export class StatCache {
  readonly #byPath = new Map<string, CachedHash>();
  /** Files read and hashed (a test counts them). */
  hashed = 0;

  get(file: string): CachedHash | undefined {
    return this.#byPath.get(file);
  }

  set(file: string, value: CachedHash): void {
    // Worktrees come and go: rather than track which paths are gone, start over past a bound.
    if (this.#byPath.size >= CACHE_ENTRIES) this.#byPath.clear();
    this.#byPath.set(file, value);
  }

  delete(file: string): void {
    this.#byPath.delete(file);
  }
}

const sharedCache = new StatCache();

export interface ScanOptions {
  cache?: StatCache;
  limits?: { files: number; depth: number };
  /** The clock the racy check reads (ms since the epoch); a test moves it. */
  now?: () => number;
}

/** The workspace under `root` as it is now. A missing root is an empty workspace. */
export async function scanWorkspace(root: string, options: ScanOptions = {}): Promise<WorkspaceState> {
  const cache = options.cache ?? sharedCache;
  const limits = options.limits ?? SCAN_LIMITS;
  const now = options.now ?? Date.now;
  const entries = new Map<string, ScannedEntry>();
  let complete = true;
  let taken = 0;
  const visit = async (file: string, relPath: string, depth: number): Promise<void> => {
    const stat = await lstat(file, { bigint: true }).catch(() => undefined);
    if (!stat) return;
    if (stat.isDirectory()) {
      if (depth + 1 > limits.depth) complete = false;
      else await walk(file, relPath, depth + 1);
      return;
    }
    // Counted before the hash is awaited: entries of a folder are visited a few at once.
    if (taken >= limits.files) {
      complete = false;
      return;
    }
    taken += 1;
    const found = await entryOf(file, stat, cache, now);
    if (found !== undefined) entries.set(relPath, { ...found, changedMs: Number(stat.ctimeNs / 1_000_000n) });
  };
  // A git folder: what makes git run a program, in it and in each submodule's git folder under its
  // `modules/` (a top-level `git status` runs git in every submodule, which reads that config too).
  const visitGitFolder = async (dir: string, rel: string, depth: number): Promise<void> => {
    for (const part of GIT_SCANNED) await visit(path.join(dir, part), `${rel}/${part}`, depth);
    await visitSubmodules(path.join(dir, 'modules'), `${rel}/modules`, depth + 1);
  };
  // Under `modules/`, a folder holding HEAD is a submodule's git folder; any other is part of a
  // submodule's name (`a/b` is kept in modules/a/b).
  const visitSubmodules = async (dir: string, rel: string, depth: number): Promise<void> => {
    const names = await readdir(dir, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
      // None is the usual case; a folder the bot cannot list hides what is in it.
      if (error.code !== 'ENOENT' && error.code !== 'ENOTDIR') complete = false;
      return [];
    });
    if (names.length > 0 && depth + 1 > limits.depth) {
      complete = false;
      return;
    }
    for (const dirent of names.filter((d) => d.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
      const sub = path.join(dir, dirent.name);
      const isGit = (await lstat(path.join(sub, 'HEAD')).catch(() => undefined)) !== undefined;
      if (isGit) await visitGitFolder(sub, `${rel}/${dirent.name}`, depth + 1);
      else await visitSubmodules(sub, `${rel}/${dirent.name}`, depth + 1);
    }
  };
  const walk = async (dir: string, rel: string, depth: number): Promise<void> => {
    let handle;
    try {
      handle = await opendir(dir);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // The root that does not exist yet (a worktree not made), or a folder removed mid-scan.
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      // A folder the bot cannot list (chmod 000) hides what is in it: not known, so not clean.
      complete = false;
      return;
    }
    const names: string[] = [];
    for await (const dirent of handle) names.push(dirent.name);
    names.sort();
    const one = async (name: string): Promise<void> => {
      if (!complete) return;
      const file = path.join(dir, name);
      const relPath = rel ? `${rel}/${name}` : name;
      const gitFolder = depth === 0 && name === '.git' && (await lstat(file).catch(() => undefined))?.isDirectory();
      // The workspace's own git folder: only what makes git run a program (its config, hooks and
      // info/attributes), not objects and an index that every git command rewrites.
      if (gitFolder) await visitGitFolder(file, '.git', 1);
      else await visit(file, relPath, depth);
    };
    // A folder's entries a few at a time: one by one, each stat and read waits for the last.
    for (let i = 0; i < names.length && complete; i += PARALLEL)
      await Promise.all(names.slice(i, i + PARALLEL).map(one));
  };
  await walk(root, '', 0);
  return { entries, complete };
}

async function entryOf(
  file: string,
  stat: BigIntStats,
  cache: StatCache,
  now: () => number,
): Promise<{ entry: string; gitBlob?: string } | undefined> {
  const cached = cache.get(file);
  const mode = Number(stat.mode);
  if (
    cached &&
    cached.size === Number(stat.size) &&
    cached.mtimeNs === stat.mtimeNs &&
    cached.ctimeNs === stat.ctimeNs &&
    cached.ino === stat.ino &&
    cached.mode === mode
  )
    return { entry: cached.entry, ...(cached.gitBlob ? { gitBlob: cached.gitBlob } : {}) };
  const hashedAt = now();
  const found = await freshEntry(file, stat);
  if (found === undefined) {
    cache.delete(file);
    return undefined;
  }
  cache.hashed += 1;
  const changedMs = Number(stat.ctimeNs / 1_000_000n);
  // Racy: changed too recently for the stat to prove a later write would show. Hashed again next time.
  if (hashedAt - changedMs < RACY_MS) cache.delete(file);
  else
    cache.set(file, {
      size: Number(stat.size),
      mtimeNs: stat.mtimeNs,
      ctimeNs: stat.ctimeNs,
      ino: stat.ino,
      mode,
      ...found,
    });
  return found;
}

async function freshEntry(file: string, stat: BigIntStats): Promise<{ entry: string; gitBlob?: string } | undefined> {
  if (stat.isSymbolicLink()) {
    const target = await readlink(file, { encoding: 'buffer' }).catch(() => undefined);
    if (target === undefined) return undefined;
    return { entry: `l:${createHash('sha256').update(target).digest('hex')}`, gitBlob: gitBlobOf(target) };
  }
  if (stat.isFile()) {
    try {
      const { sha256, gitBlob } = await hashFile(file, stat.size);
      return { entry: `${(Number(stat.mode) & 0o111) !== 0 ? 'x' : 'f'}:${sha256}`, gitBlob };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      // A file the bot cannot read (chmod 000, a link swapped in): known by its stat, so any change shows.
      return { entry: `o:unreadable:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}:${stat.ino}` };
    }
  }
  if (stat.isFIFO()) return { entry: 'o:fifo' };
  if (stat.isSocket()) return { entry: 'o:socket' };
  return { entry: 'o:device' };
}

function gitBlobOf(bytes: Buffer): string {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

/**
 * A file's sha256 and git object id, streamed (a large file is never held whole). The object id
 * assumes the size lstat saw: a file that grows while read gets an id no commit holds (fails closed).
 */
async function hashFile(file: string, size: bigint): Promise<{ sha256: string; gitBlob: string }> {
  // The path was a file when lstat saw it: a link swapped in since is not followed (O_NOFOLLOW),
  // and a fifo swapped in does not block the scan (O_NONBLOCK).
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const sha256 = createHash('sha256');
    const sha1 = createHash('sha1').update(`blob ${size}\0`);
    if (size <= READ_WHOLE_BYTES) {
      const bytes = await handle.readFile();
      sha256.update(bytes);
      sha1.update(bytes);
    } else
      for await (const chunk of handle.createReadStream({ highWaterMark: 1 << 20, autoClose: false })) {
        sha256.update(chunk as Buffer);
        sha1.update(chunk as Buffer);
      }
    return { sha256: sha256.digest('hex'), gitBlob: sha1.digest('hex') };
  } finally {
    await handle.close();
  }
}
