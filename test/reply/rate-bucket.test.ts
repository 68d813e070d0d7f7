import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { takeToken, waitForToken } from '../../src/reply/rate-bucket.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/log.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

describe('a wait for a rate token that is given up', () => {
  let db: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase('rate_bucket');
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    pool.on('error', () => undefined);
    await migrate(db.url, createLogger('silent'));
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  const tokens = async (key: string) =>
    Number((await pool.query('SELECT tokens FROM countersign.rate_buckets WHERE key = $1', [key])).rows[0].tokens);

  it('gives its token back, so the budget loses no call to a reply handed to the outbox', async () => {
    const key = 'test:handoff';
    const bucket = { capacity: 1, refillPerSecond: 1 / 60 };
    expect(await takeToken(pool, key, bucket)).toBe(0);
    const abort = new AbortController();
    const waiting = waitForToken(pool, key, bucket, abort.signal);
    // The waiter took the next token (the bucket is in debt by it) and sleeps for about a minute.
    await expect.poll(() => tokens(key)).toBeLessThan(-0.9);
    abort.abort();
    await expect(waiting).rejects.toThrow();
    // Back to where it was before the waiter came: the next caller waits one token's refill, not two.
    expect(await tokens(key)).toBeGreaterThan(-0.1);
    const nextWaitMs = await takeToken(pool, key, bucket);
    expect(nextWaitMs).toBeLessThanOrEqual(60_000);
    expect(nextWaitMs).toBeGreaterThan(50_000);
  });

  it('takes no token at all when given up before it asked', async () => {
    const key = 'test:aborted';
    const abort = new AbortController();
    abort.abort();
    await expect(waitForToken(pool, key, { capacity: 1, refillPerSecond: 1 }, abort.signal)).rejects.toThrow();
    expect((await pool.query('SELECT 1 FROM countersign.rate_buckets WHERE key = $1', [key])).rowCount).toBe(0);
  });
});
