import { setTimeout as sleep } from 'node:timers/promises';
import type { Queryable } from '../db/pool.ts';

/**
 * Token buckets in Postgres (countersign.rate_buckets), shared by every worker process: a reply is
 * streamed by whichever worker picked up the turn, so only a shared budget keeps many workers
 * together inside a platform's limits.
 */

export interface BucketShape {
  /** Tokens a full bucket holds: the burst allowed after a quiet spell. */
  capacity: number;
  /** Tokens added back per second. */
  refillPerSecond: number;
}

/**
 * A bucket row's level now, in SQL: its tokens plus the refill since it was last updated, never above
 * the capacity ($2; $3 is the refill per second, `now` the statement's clock). `row` is the alias.
 */
const refilled = (row: string) =>
  `LEAST($2::float8, ${row}.tokens + GREATEST(0, EXTRACT(EPOCH FROM ((SELECT t FROM now) - ${row}.updated_at))) * $3::float8)`;

/**
 * Takes one token and says how long to wait before using it, in ms (0: go now). The token is
 * reserved either way — the bucket goes negative, so the next caller is queued behind this one
 * instead of both racing for the same refill. One statement, row-locked by the upsert, with time
 * from the database so workers on machines with skewed clocks agree.
 */
const TAKE_TOKEN = `
  WITH now AS (SELECT clock_timestamp() AS t)
  INSERT INTO countersign.rate_buckets AS b (key, tokens, updated_at)
  SELECT $1::text, $2::float8 - 1, now.t FROM now
  ON CONFLICT (key) DO UPDATE SET
    tokens = ${refilled('b')} - 1,
    updated_at = GREATEST(b.updated_at, (SELECT t FROM now))
  RETURNING tokens`;

export async function takeToken(db: Queryable, key: string, bucket: BucketShape): Promise<number> {
  if (!(bucket.capacity >= 1) || !(bucket.refillPerSecond > 0)) {
    throw new Error(`A rate bucket needs capacity ≥ 1 and a positive refill; got ${JSON.stringify(bucket)}`);
  }
  const { rows } = await db.query<{ tokens: number }>(TAKE_TOKEN, [key, bucket.capacity, bucket.refillPerSecond]);
  const tokens = Number(rows[0]?.tokens);
  return tokens >= 0 ? 0 : Math.ceil((-tokens / bucket.refillPerSecond) * 1000);
}

/**
 * Takes a token and waits until it may be used. Aborted while waiting (a turn handing its reply to
 * the outbox), the token is given back: the next caller in line waits that much less, so a wait
 * given up never costs the budget a call.
 */
export async function waitForToken(
  db: Queryable,
  key: string,
  bucket: BucketShape,
  signal?: AbortSignal,
): Promise<void> {
  signal?.throwIfAborted();
  const waitMs = await takeToken(db, key, bucket);
  if (waitMs <= 0) return;
  try {
    await sleep(waitMs, undefined, { signal });
  } catch (error) {
    // Best effort: a token not given back (database gone) only costs one call's worth of budget.
    await giveTokenBack(db, key, bucket).catch(() => undefined);
    throw error;
  }
}

/**
 * A stream's partial edit waits in the budget's second lane: it takes a token only when one is free,
 * never queueing in debt, so a card or a final text (the first lane, which queues) is never stuck
 * behind other conversations' partial edits. A partial edit can afford this: the next one carries
 * newer text, and the final replaces them all. `finalized` is aborted when the text a waiting edit
 * will send became final: from then on it queues like a final.
 */
export interface PartialEdit {
  finalized: AbortSignal;
}

/**
 * Takes a token only if a whole one is free now, in one statement; otherwise takes nothing and says
 * when one may be free, in ms (from the level before this statement: a partial edit then looks
 * again, and a final that queued meanwhile is ahead of it). The WHERE of ON CONFLICT is checked on
 * the newest row version under its lock, so two processes never take the same free token.
 */
const TAKE_FREE_TOKEN = `
  WITH now AS (SELECT clock_timestamp() AS t),
  taken AS (
    INSERT INTO countersign.rate_buckets AS b (key, tokens, updated_at)
    SELECT $1::text, $2::float8 - 1, now.t FROM now
    ON CONFLICT (key) DO UPDATE SET
      tokens = ${refilled('b')} - 1,
      updated_at = GREATEST(b.updated_at, (SELECT t FROM now))
    WHERE ${refilled('b')} >= 1
    RETURNING 1
  )
  SELECT EXISTS (SELECT 1 FROM taken) AS taken,
    (SELECT ${refilled('r')} FROM countersign.rate_buckets r WHERE r.key = $1::text) AS level`;

/** How long a partial edit looks again at the latest, while finals keep the bucket in debt. */
const PARTIAL_LOOK_MAX_MS = 5000;

async function takeFreeToken(db: Queryable, key: string, bucket: BucketShape): Promise<number> {
  const { rows } = await db.query<{ taken: boolean; level: number | null }>(TAKE_FREE_TOKEN, [
    key,
    bucket.capacity,
    bucket.refillPerSecond,
  ]);
  if (rows[0]?.taken) return 0;
  const level = Number(rows[0]?.level ?? 0);
  // A little spread, so partial edits waiting on one budget do not all look at the same instant.
  const untilFree = ((1 - level) / bucket.refillPerSecond) * 1000 * (1 + Math.random() * 0.1);
  return Math.min(PARTIAL_LOOK_MAX_MS, Math.max(10, Math.ceil(untilFree)));
}

/**
 * Waits in the second lane (see PartialEdit) until a token is free and takes it. It holds no token
 * while it waits, so a wait given up has nothing to give back.
 */
async function waitForFreeToken(
  db: Queryable,
  key: string,
  bucket: BucketShape,
  partial: PartialEdit,
  signal?: AbortSignal,
): Promise<void> {
  for (;;) {
    signal?.throwIfAborted();
    if (partial.finalized.aborted) return waitForToken(db, key, bucket, signal);
    const waitMs = await takeFreeToken(db, key, bucket);
    if (waitMs === 0) return;
    const wake = signal ? AbortSignal.any([signal, partial.finalized]) : partial.finalized;
    await sleep(waitMs, undefined, { signal: wake }).catch((error: unknown) => {
      if (signal?.aborted) throw error;
    });
  }
}

/** Waits in the lane a call belongs to: the first (queueing) unless it is a partial edit. */
function waitInLane(
  db: Queryable,
  key: string,
  bucket: BucketShape,
  signal: AbortSignal | undefined,
  partial: PartialEdit | undefined,
): Promise<void> {
  return partial ? waitForFreeToken(db, key, bucket, partial, signal) : waitForToken(db, key, bucket, signal);
}

/** One budget a call draws from: its bucket's key and shape. */
export interface BudgetDraw {
  key: string;
  bucket: BucketShape;
}

/**
 * Takes a token from each budget in turn and waits until all may be used (a call counted by several
 * budgets: Discord's channel and global ones). Given up while waiting for a later one, the tokens
 * already taken go back too: a wait given up costs no budget a call, not even the ones it had passed.
 */
async function waitForTokens(
  db: Queryable,
  draws: readonly BudgetDraw[],
  signal?: AbortSignal,
  partial?: PartialEdit,
): Promise<void> {
  const taken: BudgetDraw[] = [];
  try {
    for (const draw of draws) {
      await waitInLane(db, draw.key, draw.bucket, signal, partial);
      taken.push(draw);
    }
  } catch (error) {
    // Best effort, as in waitForToken.
    for (const draw of taken) await giveTokenBack(db, draw.key, draw.bucket).catch(() => undefined);
    throw error;
  }
}

async function giveTokenBack(db: Queryable, key: string, bucket: BucketShape): Promise<void> {
  await db.query('UPDATE countersign.rate_buckets SET tokens = LEAST($2::float8, tokens + 1) WHERE key = $1', [
    key,
    bucket.capacity,
  ]);
}

/**
 * Takes a token only if one is free now; otherwise gives the reservation back and returns false.
 * For optional calls with a fallback (a native stream when edits would do), which should never wait.
 */
async function tryTakeToken(db: Queryable, key: string, bucket: BucketShape): Promise<boolean> {
  if ((await takeToken(db, key, bucket)) === 0) return true;
  await giveTokenBack(db, key, bucket);
  return false;
}

/**
 * The shared buckets, as platform outbounds use them: they get this instead of the database, so an
 * adapter reaches Postgres only through the budgets it spends.
 */
export class RateBuckets {
  readonly #db: Queryable;

  constructor(db: Queryable) {
    this.#db = db;
  }

  /** Takes a token and waits until it may be used; a partial edit waits in the second lane (PartialEdit). */
  wait(key: string, bucket: BucketShape, signal?: AbortSignal, partial?: PartialEdit): Promise<void> {
    return waitInLane(this.#db, key, bucket, signal, partial);
  }

  /** Takes a token of each budget and waits until all may be used (see `waitForTokens`). */
  waitAll(draws: readonly BudgetDraw[], signal?: AbortSignal, partial?: PartialEdit): Promise<void> {
    return waitForTokens(this.#db, draws, signal, partial);
  }

  /** Takes a token only if one is free now (see `tryTakeToken`). */
  tryTake(key: string, bucket: BucketShape): Promise<boolean> {
    return tryTakeToken(this.#db, key, bucket);
  }
}
