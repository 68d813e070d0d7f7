import { spawn, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded.ts';
import { initMarkerPath, passwordFilePath } from '../../src/db/embedded-data-dir.ts';

// Every cluster lives in a temporary directory of its own, never in the repository's .data.
const parents: string[] = [];
const running: EmbeddedDatabase[] = [];

async function tempDataDir(): Promise<string> {
  const parent = await mkdtemp(path.join(os.tmpdir(), 'cs-embedded-'));
  // Postgres may run as another user (root runs it as `postgres`); it must reach its directory.
  await chmod(parent, 0o755);
  parents.push(parent);
  return path.join(parent, 'data');
}

async function start(dir: string): Promise<EmbeddedDatabase> {
  const db = await startEmbeddedPostgres({ dir });
  running.push(db);
  return db;
}

async function stop(db: EmbeddedDatabase): Promise<void> {
  await db.stop();
  running.splice(running.indexOf(db), 1);
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** Sets the cluster's role password as clusters made before the password file had it. */
async function makeLegacy(db: EmbeddedDatabase): Promise<void> {
  await query(db.adminUrl, `ALTER ROLE countersign PASSWORD 'countersign'`);
}

const passwordOf = (url: string) => decodeURIComponent(new URL(url).password);

/** Running, not a zombie: a killed orphan may linger as one until init reaps it. */
async function isRunning(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
  } catch {
    return false;
  }
}

afterEach(async () => {
  for (const db of running.splice(0)) await db.stop();
  for (const parent of parents.splice(0)) await rm(parent, { recursive: true, force: true });
});

describe('the embedded Postgres data directory', () => {
  it('refuses a non-empty directory that holds no cluster, naming it, and leaves its files alone', async () => {
    const dir = await tempDataDir();
    await mkdir(dir);
    await writeFile(path.join(dir, 'notes.txt'), 'my thesis');

    const error = await startEmbeddedPostgres({ dir }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toContain(dir);
    expect(error?.message).toMatch(/not empty and holds no Postgres cluster/);
    expect(error?.message).toMatch(/EMBEDDED_POSTGRES_DIR/);
    expect(await readFile(path.join(dir, 'notes.txt'), 'utf8')).toBe('my thesis');
    expect(existsSync(initMarkerPath(dir))).toBe(false);
  });

  it('clears and re-initialises a cluster whose first start was interrupted (our marker beside it)', async () => {
    const dir = await tempDataDir();
    // What an initdb killed half-way leaves: PG_VERSION is written early, the rest never came.
    await mkdir(path.join(dir, 'base'), { recursive: true });
    await writeFile(path.join(dir, 'PG_VERSION'), '18\n');
    await writeFile(initMarkerPath(dir), 'initialising\n');

    const db = await start(dir);
    expect(await query<{ one: number }>(db.url, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
    expect(existsSync(initMarkerPath(dir))).toBe(false);
  });

  it('keeps a cluster without our marker, even one that will not start: its data is never deleted', async () => {
    const dir = await tempDataDir();
    await mkdir(dir);
    await writeFile(path.join(dir, 'PG_VERSION'), '18\n');
    await writeFile(path.join(dir, 'precious'), 'data');

    await expect(startEmbeddedPostgres({ dir })).rejects.toThrow(/did not start/);
    expect(await readFile(path.join(dir, 'precious'), 'utf8')).toBe('data');
  });
});

describe('the embedded Postgres password', () => {
  it('is random per cluster, kept in a 0600 file in the data directory, and reused on the next start', async () => {
    const dirA = await tempDataDir();
    const dirB = await tempDataDir();
    const a = await start(dirA);
    const b = await start(dirB);

    const fileA = (await readFile(passwordFilePath(dirA), 'utf8')).trim();
    expect((await stat(passwordFilePath(dirA))).mode & 0o777).toBe(0o600);
    expect(passwordOf(a.url)).toBe(fileA);
    expect(fileA).not.toBe('countersign');
    expect(passwordOf(b.url)).not.toBe(fileA);

    await stop(a);
    const again = await start(dirA);
    expect(passwordOf(again.url)).toBe(fileA);
    expect(await query<{ one: number }>(again.url, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });

  it('keeps a cluster created with the old fixed password working, and moves it to a random one', async () => {
    const dir = await tempDataDir();
    const first = await start(dir);
    await makeLegacy(first);
    await stop(first);
    // A cluster from before the password file existed.
    await rm(passwordFilePath(dir));

    const db = await start(dir);
    expect(await query<{ one: number }>(db.url, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
    const stored = (await readFile(passwordFilePath(dir), 'utf8')).trim();
    expect(passwordOf(db.url)).toBe(stored);
    expect(stored).not.toBe('countersign');
    const legacyUrl = new URL(db.url);
    legacyUrl.password = 'countersign';
    await expect(query(legacyUrl.toString(), 'SELECT 1')).rejects.toMatchObject({ code: '28P01' });
  });

  it('finishes a move to a random password that a crash interrupted (file written, role not yet changed)', async () => {
    const dir = await tempDataDir();
    const first = await start(dir);
    const stored = passwordOf(first.url);
    await makeLegacy(first);
    await stop(first);

    const db = await start(dir);
    expect(passwordOf(db.url)).toBe(stored);
    expect(await query<{ one: number }>(db.url, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });
});

describe('a stale postmaster.pid', () => {
  it('naming a live process that is not our postmaster: that process is not signalled, and the cluster starts', async () => {
    const dir = await tempDataDir();
    const first = await start(dir);
    await stop(first);
    // An orphan (re-parented to init), like a postmaster whose owner died: the case the old check
    // signalled on the pid alone.
    const pid = Number(execFileSync('sh', ['-c', 'sleep 300 >/dev/null 2>&1 & echo $!'], { encoding: 'utf8' }).trim());
    // And a child of this process, whose live parent the old check took for "another owner".
    const child = spawn('sleep', ['300'], { stdio: 'ignore' });
    const childExit = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, signal) => resolve(signal)),
    );
    try {
      for (const stalePid of [pid, child.pid!]) {
        await writeFile(path.join(dir, 'postmaster.pid'), `${stalePid}\n${dir}\n`);
        const db = await start(dir);
        expect(await query<{ one: number }>(db.url, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
        await stop(db);
      }
      expect(await isRunning(pid)).toBe(true);
      expect(child.exitCode).toBeNull();
      expect(child.signalCode).toBeNull();
    } finally {
      process.kill(pid, 'SIGKILL');
      child.kill('SIGKILL');
      await childExit;
    }
  });
});
