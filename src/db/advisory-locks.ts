import type { Queryable } from './pool.ts';

/**
 * Session-level Postgres advisory locks with two keys: `space` (a constant naming what is locked)
 * and the hash of `key`. Held by the connection until unlocked or until the connection ends, however
 * the process ended — which is what makes them a liveness signal. One statement per function.
 */

/** Waits for the lock. */
export async function lockKey(db: Queryable, space: number, key: string): Promise<void> {
  await db.query('SELECT pg_advisory_lock($1::int, hashtext($2::text))', [space, key]);
}

/** Takes the lock if it is free; false when another connection holds it. */
export async function tryLockKey(db: Queryable, space: number, key: string): Promise<boolean> {
  const { rows } = await db.query<{ locked: boolean }>(
    'SELECT pg_try_advisory_lock($1::int, hashtext($2::text)) AS locked',
    [space, key],
  );
  return rows[0]?.locked === true;
}

/** Releases a lock this connection holds. */
export async function unlockKey(db: Queryable, space: number, key: string): Promise<void> {
  await db.query('SELECT pg_advisory_unlock($1::int, hashtext($2::text))', [space, key]);
}
