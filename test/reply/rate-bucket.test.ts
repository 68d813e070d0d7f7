import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateBuckets, takeToken, waitForToken } from '../../src/reply/rate-bucket.ts';
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

describe('cards and finals before partial edits, within one budget', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let buckets: RateBuckets;

  beforeAll(async () => {
    db = await createTestDatabase('rate_lanes');
    pool = new pg.Pool({ connectionString: db.url, max: 16 });
    pool.on('error', () => undefined);
    await migrate(db.url, createLogger('silent'));
    buckets = new RateBuckets(pool);
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  const tokens = async (key: string) =>
    Number((await pool.query('SELECT tokens FROM countersign.rate_buckets WHERE key = $1', [key])).rows[0].tokens);
  /** A partial edit that is not final yet, and the switch that makes it final. */
  const partialEdit = () => {
    const finalized = new AbortController();
    return { partial: { finalized: finalized.signal }, finalize: () => finalized.abort() };
  };
  /** Resolves in the order the waits got their tokens. */
  const recordOrder = (order: string[], name: string, wait: Promise<void>) => wait.then(() => void order.push(name));

  it('gives the next token to a card that came after other conversations’ waiting partial edits', async () => {
    const key = 'test:lanes:card';
    // The next whole token is half a second away: the partial edits are all waiting when the card comes.
    const bucket = { capacity: 1, refillPerSecond: 2 };
    expect(await takeToken(pool, key, bucket)).toBe(0);
    const order: string[] = [];
    const partials = Array.from({ length: 5 }, (_, i) =>
      recordOrder(order, `partial ${i}`, buckets.wait(key, bucket, undefined, partialEdit().partial)),
    );
    // Every partial edit has looked at the empty bucket and taken nothing: it is not in debt.
    await new Promise((r) => setTimeout(r, 30));
    expect(await tokens(key)).toBeGreaterThan(-0.01);
    const card = recordOrder(order, 'card', buckets.wait(key, bucket));
    await Promise.all([card, ...partials]);
    expect(order[0]).toBe('card');
    // None of the partial edits was lost: each got a token of its own after the card.
    expect(order).toHaveLength(6);
  });

  it('queues a partial edit whose text became final while it waited as a final, ahead of partials', async () => {
    const key = 'test:lanes:finalized';
    const bucket = { capacity: 1, refillPerSecond: 4 };
    expect(await takeToken(pool, key, bucket)).toBe(0);
    // Finals of other conversations keep the bucket in debt for a while.
    for (let i = 0; i < 3; i++) await takeToken(pool, key, bucket);
    const order: string[] = [];
    const other = recordOrder(order, 'other partial', buckets.wait(key, bucket, undefined, partialEdit().partial));
    const mine = partialEdit();
    const becameFinal = recordOrder(order, 'became final', buckets.wait(key, bucket, undefined, mine.partial));
    await new Promise((r) => setTimeout(r, 30));
    mine.finalize();
    await Promise.all([other, becameFinal]);
    expect(order).toEqual(['became final', 'other partial']);
  });

  it('takes a free token at once for a partial edit when no final is waiting', async () => {
    const key = 'test:lanes:free';
    const bucket = { capacity: 2, refillPerSecond: 1 / 60 };
    await buckets.wait(key, bucket, undefined, partialEdit().partial);
    expect(await tokens(key)).toBeCloseTo(1, 2);
  });

  it('takes nothing when a partial edit’s wait is given up', async () => {
    const key = 'test:lanes:given-up';
    const bucket = { capacity: 1, refillPerSecond: 1 / 60 };
    expect(await takeToken(pool, key, bucket)).toBe(0);
    const before = await tokens(key);
    const abort = new AbortController();
    const waiting = buckets.wait(key, bucket, abort.signal, partialEdit().partial);
    await new Promise((r) => setTimeout(r, 30));
    abort.abort();
    await expect(waiting).rejects.toThrow();
    expect(await tokens(key)).toBeCloseTo(before, 2);
  });
});
