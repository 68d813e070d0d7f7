import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, open, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/**
 * What Countersign may do with the embedded Postgres data directory. Countersign deletes only what it
 * created itself: a cluster whose initdb it started and that never finished (the marker below is
 * still there). A non-empty directory without a cluster is somebody else's files, and a cluster
 * without the marker holds data, however damaged.
 */
export type DataDirState =
  /** A cluster (PG_VERSION) whose initialisation finished. */
  | 'initialised'
  /** Absent or empty: safe to initialise. */
  | 'empty'
  /** A cluster Countersign began to initialise and that never finished: safe to clear and redo. */
  | 'half-initialised';

/**
 * The marker lives beside the data directory, not in it, because initdb refuses any non-empty
 * directory (dot files included). It exists from just before initdb until the cluster's password
 * file is written, so its presence means "our initialisation did not finish".
 */
export function initMarkerPath(dir: string): string {
  return path.join(path.dirname(dir), `.${path.basename(dir)}.countersign-initdb`);
}

/** The cluster's password, inside the data directory so it travels with the cluster. */
export function passwordFilePath(dir: string): string {
  return path.join(dir, 'countersign.password');
}

/** The password of clusters created before each cluster got its own (they keep working). */
export const LEGACY_PASSWORD = 'countersign';

export async function inspectDataDir(dir: string): Promise<DataDirState> {
  if (existsSync(initMarkerPath(dir))) return 'half-initialised';
  if (existsSync(path.join(dir, 'PG_VERSION'))) return 'initialised';
  if (!existsSync(dir)) return 'empty';
  if (!(await stat(dir)).isDirectory()) {
    throw new Error(
      `The embedded Postgres data directory ${dir} (EMBEDDED_POSTGRES_DIR) is a file, not a directory. Point EMBEDDED_POSTGRES_DIR at a new or empty directory, or set DATABASE_URL.`,
    );
  }
  const entries = await readdir(dir);
  if (entries.length === 0) return 'empty';
  throw new Error(
    `The embedded Postgres data directory ${dir} (EMBEDDED_POSTGRES_DIR) is not empty and holds no Postgres cluster (no PG_VERSION), so Countersign will not use it and will not delete anything in it. ` +
      `Point EMBEDDED_POSTGRES_DIR at a new or empty directory (the default is .data/postgres), move the files away, or set DATABASE_URL.`,
  );
}

/** Declares that Countersign is about to initialise `dir` (see initMarkerPath). */
export async function writeInitMarker(dir: string): Promise<void> {
  await writeFile(
    initMarkerPath(dir),
    `Countersign is initialising the embedded Postgres cluster in ${dir}.\n` +
      `If this file remains, that initialisation did not finish and Countersign will clear that directory and start over.\n`,
  );
}

export async function removeInitMarker(dir: string): Promise<void> {
  await rm(initMarkerPath(dir), { force: true });
}

/**
 * Empties a half-initialised cluster directory. Its entries go, the directory itself stays: it may be
 * a mount point or a directory the user made for us, empty when we found it.
 */
export async function clearHalfInitialisedDir(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  for (const entry of await readdir(dir)) await rm(path.join(dir, entry), { recursive: true, force: true });
}

export function generatePassword(): string {
  // base64url: no character needs escaping in a connection string or an SQL literal.
  return randomBytes(24).toString('base64url');
}

/** The password in the cluster's password file, or undefined for a cluster that predates the file. */
export async function readClusterPassword(dir: string): Promise<string | undefined> {
  try {
    const text = (await readFile(passwordFilePath(dir), 'utf8')).trim();
    return text || undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Writes the password file with mode 0600, atomically (a crash leaves the old file or the new one,
 * never half of one). It is owned like the data directory, so the cluster's own OS user (the
 * `postgres` user when Countersign runs as root) can still read everything in its directory.
 */
export async function writeClusterPassword(dir: string, password: string): Promise<void> {
  const file = passwordFilePath(dir);
  const temporary = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  // `wx` + mode: created 0600 from the first byte, never readable by others even briefly.
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(`${password}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await chmod(temporary, 0o600); // whatever the umask did
  const owner = await stat(dir);
  if (process.getuid?.() === 0 && owner.uid !== 0) await chown(temporary, owner.uid, owner.gid);
  await rename(temporary, file);
}

/**
 * Root runs Postgres as the `postgres` system user (Postgres refuses root), and that user must be
 * able to enter the data directory's parent and the binaries' folder. A checkout in root's home or a
 * `mktemp -d` (mode 0700) lets it into neither, so Countersign keeps them here instead: only root
 * writes in /var/lib, and, unlike /tmp, nothing there is cleaned away while a cluster lives in it.
 */
export const POSTGRES_USER_HOME = '/var/lib/countersign';

/** A system user's ids, as child processes are started with them. */
export interface SystemUser {
  uid: number;
  gid: number;
}

export const runsAsRoot = (): boolean => process.getuid?.() === 0;

/**
 * The one line for a root start that cannot work: why the `postgres` user is involved, what stops
 * it (naming the directory), and both ways out.
 */
export function rootStartError(problem: string, cause?: unknown): Error {
  return new Error(
    `Countersign runs as root, so its embedded Postgres runs as the \`postgres\` system user, and ${problem}. ` +
      `Set DATABASE_URL to use a Postgres server you run, or run Countersign as a non-root user.`,
    { cause },
  );
}

/** The `postgres` system user, created the way embedded-postgres creates it when it is missing. */
export async function postgresSystemUser(): Promise<SystemUser> {
  const lookup = async (): Promise<SystemUser> => {
    const [uid, gid] = await Promise.all([
      execFileAsync('id', ['-u', 'postgres']),
      execFileAsync('id', ['-g', 'postgres']),
    ]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  };
  try {
    return await lookup();
  } catch {
    // embedded-postgres would create it at initdb; Countersign needs it before, to see what it can enter.
    try {
      await execFileAsync('groupadd', ['-f', 'postgres']);
      await execFileAsync('useradd', ['-g', 'postgres', 'postgres']);
      return await lookup();
    } catch (error) {
      throw rootStartError('there is no such user and creating one failed', error);
    }
  }
}

/**
 * Whether `user` can enter `dir`. Tried rather than worked out from modes, so groups and ACLs count
 * exactly as they will for Postgres, which is started the same way (uid and gid, no other groups).
 */
export async function canEnter(user: SystemUser, dir: string): Promise<boolean> {
  return execFileAsync('/bin/sh', ['-c', 'cd -- "$1"', 'sh', dir], { uid: user.uid, gid: user.gid }).then(
    () => true,
    () => false,
  );
}

/** The outermost folder on the way to `dir` that `user` cannot enter: the one a message should name. */
export async function firstDirClosedTo(user: SystemUser, dir: string): Promise<string> {
  const way = [dir];
  while (path.dirname(way[0] as string) !== way[0]) way.unshift(path.dirname(way[0] as string));
  for (const step of way) if (!(await canEnter(user, step))) return step;
  return dir;
}

/**
 * Makes `dir` a folder that root alone writes in and every user may enter. An existing one that
 * someone else owns or may write in is refused: the `postgres` user runs the binaries kept there.
 */
export async function makeRootOwnedDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const { uid, mode } = await stat(dir);
  if (uid !== 0 || (mode & 0o022) !== 0) {
    throw new Error(
      `${dir} must belong to root and be writable by root alone (it is uid ${uid}, mode ${(mode & 0o777).toString(8)})`,
    );
  }
  // Whatever the umask made of it: the `postgres` user must be able to enter.
  await chmod(dir, 0o755);
}

/**
 * Where the cluster for `dir` lives when the `postgres` user cannot enter `dir`'s parent: named
 * after the whole path of `dir`, so every checkout gets its own and a restart finds the same one.
 */
export function dataDirForPostgresUser(dir: string): string {
  const digest = createHash('sha256').update(path.resolve(dir)).digest('hex').slice(0, 16);
  return path.join(POSTGRES_USER_HOME, 'data', `${path.basename(dir)}-${digest}`);
}

/**
 * The data directory Postgres gets for `dir` when root runs it as `user`: `dir` itself when `user`
 * can enter its parent, otherwise dataDirForPostgresUser(dir). A cluster that already lives in an
 * unreachable `dir` is neither moved nor shadowed by a new, empty one: that is the one-line error.
 */
export async function dataDirReachableBy(user: SystemUser, dir: string): Promise<string> {
  const parent = path.dirname(dir);
  if (await canEnter(user, parent)) return dir;
  const closed = await firstDirClosedTo(user, parent);
  if (existsSync(path.join(dir, 'PG_VERSION'))) {
    throw rootStartError(`that user cannot enter ${closed}, on the way to the cluster in ${dir}`);
  }
  const relocated = dataDirForPostgresUser(dir);
  const home = path.dirname(relocated);
  try {
    await makeRootOwnedDir(POSTGRES_USER_HOME);
    await makeRootOwnedDir(home);
  } catch (error) {
    throw rootStartError(
      `that user cannot enter ${closed}, on the way to ${dir}, and ${home} could not be made for it instead (${(error as Error).message})`,
      error,
    );
  }
  if (!(await canEnter(user, home))) {
    throw rootStartError(`that user cannot enter ${closed}, on the way to ${dir}, nor ${home}`);
  }
  return relocated;
}
