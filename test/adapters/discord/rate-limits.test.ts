import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DISCORD_BUCKETS,
  channelEditBucketKey,
  globalBucketKey,
  takeToken,
  waitForToken,
} from '../../../src/adapters/discord/rate-limits.ts';
import { createRest, DiscordOutbound } from '../../../src/adapters/discord/outbound.ts';
import { RateBuckets } from '../../../src/reply/rate-bucket.ts';
import { LIMITS } from '../../../src/adapters/discord/limits.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { migrate } from '../../../src/db/migrate.ts';
import { createLogger } from '../../../src/log.ts';

describe('takeToken (Postgres token bucket shared by all workers)', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let clients: pg.Client[];
  let keyNo = 0;
  const freshKey = () => `test:${++keyNo}`;

  beforeAll(async () => {
    db = await createTestDatabase('discord_rl');
    pool = new pg.Pool({ connectionString: db.url, max: 4 });
    // pool.end() can resolve while a connection is still closing; DROP … WITH (FORCE) then ends it.
    pool.on('error', () => undefined);
    // The shared table comes from the migrations (one table for every platform).
    await migrate(db.url, createLogger('silent'));
    // Separate connections stand in for separate worker processes.
    clients = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        return c;
      }),
    );
  });
  afterAll(async () => {
    await Promise.all((clients ?? []).map((c) => c.end()));
    await pool?.end();
    await db?.drop();
  });

  it('lets a full bucket’s burst go at once, then makes the next caller wait', async () => {
    const key = freshKey();
    const bucket = { capacity: 3, refillPerSecond: 0.5 };
    const burst = [];
    for (let i = 0; i < 3; i++) burst.push(await takeToken(pool, key, bucket));
    expect(burst).toEqual([0, 0, 0]);
    const next = await takeToken(pool, key, bucket);
    expect(next).toBeGreaterThan(1000);
    expect(next).toBeLessThanOrEqual(2000);
  });

  it('never lets concurrent callers on separate connections exceed the budget', async () => {
    const key = freshKey();
    const bucket = { capacity: 5, refillPerSecond: 0.5 };
    const callers = 30;
    const started = Date.now();
    const waits = await Promise.all(
      Array.from({ length: callers }, (_, i) => takeToken(clients[i % clients.length]!, key, bucket)),
    );
    const spread = Date.now() - started;
    const sorted = [...waits].sort((a, b) => a - b);
    expect(sorted.filter((w) => w === 0).length).toBeLessThanOrEqual(bucket.capacity);
    // The k-th caller beyond the burst may go no sooner than k refill intervals after the first,
    // allowing for the time the calls themselves took to arrive.
    const interval = 1000 / bucket.refillPerSecond;
    sorted.slice(bucket.capacity).forEach((wait, k) => {
      expect(wait).toBeGreaterThanOrEqual((k + 1) * interval - spread - 50);
    });
    // And every token was handed out once: the row shows exactly the debt of the queued callers.
    const { rows } = await pool.query<{ tokens: number }>(
      'SELECT tokens FROM countersign.rate_buckets WHERE key = $1',
      [key],
    );
    expect(rows[0]!.tokens).toBeGreaterThan(bucket.capacity - callers - 1);
    expect(rows[0]!.tokens).toBeLessThanOrEqual(
      bucket.capacity - callers + (spread / 1000) * bucket.refillPerSecond + 0.01,
    );
  });

  it('refills with time measured by the database', async () => {
    const key = freshKey();
    const bucket = { capacity: 1, refillPerSecond: 20 };
    expect(await takeToken(pool, key, bucket)).toBe(0);
    // Take until a caller has to wait: on a loaded machine the bucket may refill between two calls.
    let wait = 0;
    for (let i = 0; i < 20 && wait === 0; i++) wait = await takeToken(pool, key, bucket);
    expect(wait).toBeGreaterThan(0);
    // The debt that wait pays, then more than one refill (50 ms): a token again, whatever the delays.
    await sleep(wait + 60);
    expect(await takeToken(pool, key, bucket)).toBe(0);
  });

  it('never stores more than a full bucket after a long quiet spell', async () => {
    const key = freshKey();
    const bucket = { capacity: 2, refillPerSecond: 1000 };
    await takeToken(pool, key, bucket);
    await sleep(50);
    const waits = [];
    for (let i = 0; i < 3; i++) waits.push(await takeToken(pool, key, bucket));
    expect(waits.slice(0, 2)).toEqual([0, 0]);
    const { rows } = await pool.query<{ tokens: number }>(
      'SELECT tokens FROM countersign.rate_buckets WHERE key = $1',
      [key],
    );
    expect(rows[0]!.tokens).toBeLessThan(bucket.capacity);
  });

  it('keeps separate budgets for separate channels', async () => {
    const bucket = DISCORD_BUCKETS.channelEdit;
    const a = channelEditBucketKey(`a${++keyNo}`);
    const b = channelEditBucketKey(`b${keyNo}`);
    for (let i = 0; i < bucket.capacity; i++) await takeToken(pool, a, bucket);
    expect(await takeToken(pool, a, bucket)).toBeGreaterThan(0);
    expect(await takeToken(pool, b, bucket)).toBe(0);
  });

  it('shapes the channel edit budget from LIMITS so no 5-second window sees more than 5 writes', () => {
    const { capacity, refillPerSecond } = DISCORD_BUCKETS.channelEdit;
    // Worst case inside one window: a full burst, then everything refilled during the window.
    expect(capacity + refillPerSecond * LIMITS.channelEditWindowSeconds).toBeLessThanOrEqual(
      LIMITS.channelEditsPerWindow,
    );
    expect(capacity).toBeGreaterThanOrEqual(1);
  });

  it('shapes the global budget so no 1-second window sees more than the global limit, even with late requests', () => {
    const { capacity, refillPerSecond } = DISCORD_BUCKETS.global;
    // A full burst followed by a second of refill used to allow twice the limit (P9 saw 429s); and
    // requests whose tokens were taken up to 100 ms earlier land in the same window (P9 saw one 429
    // a run once final answers no longer waited out the edit interval).
    const lateMs = 100;
    expect(capacity + refillPerSecond * (1 + lateMs / 1000)).toBeLessThanOrEqual(LIMITS.globalRequestsPerSecond);
    expect(capacity).toBeGreaterThanOrEqual(1);
  });

  it('waits out the time takeToken asks for', async () => {
    const key = freshKey();
    const bucket = { capacity: 1, refillPerSecond: 1 };
    await waitForToken(pool, key, bucket);
    const started = Date.now();
    await waitForToken(pool, key, bucket);
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
  });

  it('rejects a bucket that could never hand out a token', async () => {
    await expect(takeToken(pool, freshKey(), { capacity: 0, refillPerSecond: 1 })).rejects.toThrow(/capacity/);
    await expect(takeToken(pool, freshKey(), { capacity: 1, refillPerSecond: 0 })).rejects.toThrow(/refill/);
  });
});

describe('a Discord reply’s wait for its tokens, given up', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  const applicationId = '100000000000000001';

  beforeAll(async () => {
    db = await createTestDatabase('discord_giveup');
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

  it('gives back the channel token it had already taken while it waited for the global one', async () => {
    // No request is made: only the budgets are drawn from, so the REST client points nowhere.
    const outbound = new DiscordOutbound(createRest('unused', undefined), new RateBuckets(pool), applicationId);
    const channel = '200000000000000001';
    const globalKey = globalBucketKey(applicationId);
    // The global budget is spent well into the future: ten seconds of other channels' calls queued.
    await takeToken(pool, globalKey, DISCORD_BUCKETS.global);
    await pool.query('UPDATE countersign.rate_buckets SET tokens = $2, updated_at = now() WHERE key = $1', [
      globalKey,
      -10 * DISCORD_BUCKETS.global.refillPerSecond,
    ]);
    const globalBefore = await tokens(globalKey);
    // The global bucket refills while the test runs (50 a second): read it as of the moment above,
    // so a take shows as one token less however long the machine took to get there.
    const { rows } = await pool.query<{ at: Date }>(
      'SELECT updated_at AS at FROM countersign.rate_buckets WHERE key = $1',
      [globalKey],
    );
    const globalAsBefore = async () =>
      Number(
        (
          await pool.query(
            `SELECT tokens - $2::float8 * extract(epoch FROM updated_at - $3::timestamptz) AS tokens
               FROM countersign.rate_buckets WHERE key = $1`,
            [globalKey, DISCORD_BUCKETS.global.refillPerSecond, rows[0]!.at],
          )
        ).rows[0].tokens,
      );

    const abort = new AbortController();
    const waiting = outbound.reserve({ platform: 'discord', channel }, abort.signal);
    // The channel's token is taken (its bucket was full) and the global one is awaited.
    await expect.poll(globalAsBefore).toBeLessThan(globalBefore - 0.5);
    expect(await tokens(channelEditBucketKey(channel))).toBeLessThan(DISCORD_BUCKETS.channelEdit.capacity - 0.5);
    abort.abort();
    await expect(waiting).rejects.toThrow();

    // Both are back: the channel's next edit goes at once with its whole burst, as if nobody had waited.
    expect(await tokens(channelEditBucketKey(channel))).toBeGreaterThan(DISCORD_BUCKETS.channelEdit.capacity - 0.01);
    expect(await tokens(globalKey)).toBeGreaterThan(globalBefore - 0.01);
  });

  it('takes nothing from the global budget when the channel’s own wait is given up', async () => {
    const outbound = new DiscordOutbound(createRest('unused', undefined), new RateBuckets(pool), applicationId);
    const channel = '200000000000000002';
    const channelKey = channelEditBucketKey(channel);
    // The channel's burst is spent: the next edit waits for its refill.
    for (let i = 0; i < DISCORD_BUCKETS.channelEdit.capacity; i++) {
      await takeToken(pool, channelKey, DISCORD_BUCKETS.channelEdit);
    }
    const globalKey = globalBucketKey(applicationId);
    const globalBefore = await tokens(globalKey);
    const abort = new AbortController();
    const waiting = outbound.reserve({ platform: 'discord', channel }, abort.signal);
    await expect.poll(() => tokens(channelKey)).toBeLessThan(-0.5);
    abort.abort();
    await expect(waiting).rejects.toThrow();
    expect(await tokens(channelKey)).toBeGreaterThan(-0.5);
    // Refill only ever raises the global bucket; nothing was taken from it.
    expect(await tokens(globalKey)).toBeGreaterThanOrEqual(globalBefore);
  });
});
