import { randomBytes } from 'node:crypto';
import { chmod, chown, open, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';

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
