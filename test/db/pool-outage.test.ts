import { afterEach, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** A real logger (redaction and all) writing parsed lines to an array. */
function recordingLogger() {
  const lines: Array<{ raw: string; line: LogLine }> = [];
  const log = createLogger('debug', {
    write: (raw: string) => void lines.push({ raw, line: JSON.parse(raw) as LogLine }),
  });
  const withMessage = (msg: string) => lines.filter((l) => l.line.msg === msg);
  return { log, lines, withMessage };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 50));
  if (!condition()) throw new Error(`timed out waiting for ${what}`);
}

/** Opens `n` connections at once and puts them back, so the pool holds `n` idle ones. */
async function fillPool(pool: Pool, n: number): Promise<void> {
  const clients = await Promise.all(Array.from({ length: n }, () => pool.connect()));
  for (const client of clients) client.release();
}

describe('database connection loss in the log', () => {
  let db: TestDatabase | undefined;
  let proxy: TcpProxy | undefined;
  const pools: Pool[] = [];
  afterEach(async () => {
    for (const pool of pools.splice(0)) await pool.end();
    await proxy?.close();
    await db?.drop();
  });

  async function setUp() {
    db = await createTestDatabase();
    const target = new URL(db.url);
    proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
    return TcpProxy.rewrite(db.url, proxy.port);
  }

  it('is one short line per outage (message and code, no client object), and one line when the database is back', async () => {
    const url = await setUp();
    const { log, lines, withMessage } = recordingLogger();
    const pool = createPool(url, 4, log);
    pools.push(pool);

    for (let outage = 1; outage <= 2; outage++) {
      await fillPool(pool, 4);
      proxy!.cut();
      await until(() => pool.totalCount === 0, 'every idle connection to notice the cut');
      // Queries during the outage fail to their callers; they add nothing to the log.
      for (let i = 0; i < 3; i++) await expect(pool.query('SELECT 1')).rejects.toThrow();
      expect(withMessage('database connection lost')).toHaveLength(outage);
      expect(withMessage('database connection restored')).toHaveLength(outage - 1);

      proxy!.restore();
      await pool.query('SELECT 1');
      expect(withMessage('database connection restored')).toHaveLength(outage);
    }

    const lost = withMessage('database connection lost')[0]!;
    expect(lost.line.error).toEqual({ message: expect.any(String) as string });
    expect(lost.line).not.toHaveProperty('err');
    // The old line carried the whole pg client: parameters, parsed statements, about 5 KB.
    expect(lost.raw.length).toBeLessThan(400);
    expect(lost.raw).not.toContain(new URL(url).password || '\0');
    const restored = withMessage('database connection restored')[0]!;
    expect(restored.line.level).toBeGreaterThanOrEqual(30);
    expect(lines.every((l) => l.raw.length < 400)).toBe(true);
  });

  it('says nothing when a connection drops while its own pool is being ended (a shutdown, not an outage)', async () => {
    const url = await setUp();
    const { log, withMessage } = recordingLogger();
    const pool = createPool(url, 2, log);
    // pg-pool's end() resolves before its connections have closed, so stopping the embedded Postgres
    // right after it terminates them: the piped console printed "database connection lost" at exit.
    const client = await pool.connect();
    let dropped = false;
    client.on('error', () => (dropped = true));
    const ended = pool.end();
    proxy!.cut();
    await until(() => dropped, 'the checked-out connection to notice the cut');
    client.release(true);
    await ended;
    expect(withMessage('database connection lost')).toHaveLength(0);
  });

  it('is one line for all the pools of a process on the same database', async () => {
    const url = await setUp();
    const { log, withMessage } = recordingLogger();
    const a = createPool(url, 3, log);
    const b = createPool(url, 3, log);
    pools.push(a, b);
    await Promise.all([fillPool(a, 3), fillPool(b, 3)]);

    proxy!.cut();
    await until(() => a.totalCount === 0 && b.totalCount === 0, 'every idle connection to notice the cut');
    expect(withMessage('database connection lost')).toHaveLength(1);

    proxy!.restore();
    await Promise.all([a.query('SELECT 1'), b.query('SELECT 1')]);
    expect(withMessage('database connection restored')).toHaveLength(1);
  });
});
