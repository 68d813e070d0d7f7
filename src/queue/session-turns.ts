import type { Pool, PoolClient } from '../db/pool.ts';
import { lockKey, tryLockKey, unlockKey } from '../db/advisory-locks.ts';
import type { Requester } from '../core/person.ts';
import { recordStopRequest, settleTurn, unfinishedTurnsOn } from './turn-lifecycle.ts';
import { STOP_CHANNEL } from './stop-requests.ts';

/**
 * Some platforms' turns are asked in a session that lives only as long as its process (the console's
 * terminal) and are answered there; when the process dies, nobody is left to read the answer. Left
 * alone, its job is released to the next run (once the dead process's heartbeat is stale) and
 * answered there — by whatever model that run uses, into a session nobody sees. So each session holds
 * a Postgres advisory lock for as long as its process lives (Postgres drops it with the connection,
 * however the process ended), and a starting session cancels the unfinished turns of its platform's
 * every session whose lock is free.
 */

/** The first key of the two-key advisory locks: process-bound sessions (ASCII "cons"); the second is the session's hash. */
const SESSION_LOCKS = 0x636f6e73;

/** What a turn that outlived its session is settled with. */
const orphanedTurnError = (platform: string) => `its ${platform} session ended before the turn finished`;

/**
 * Holds `session`'s lock and cancels the unfinished turns of `platform`'s sessions whose process is
 * gone; the claim keeps the lock until released.
 */
export async function claimSession(
  pool: Pool,
  platform: string,
  own: { session: string; by: Requester },
): Promise<{ cancelled: number; release(): void }> {
  const lock = await holdSessionLock(pool, own.session);
  try {
    return { cancelled: await cancelOrphanedTurns(lock, pool, platform, own), release: () => lock.release() };
  } catch (error) {
    lock.release();
    throw error;
  }
}

/** A live session's hold on its lock: one pooled connection, kept until `release`. */
interface SessionLock {
  client: PoolClient;
  release(): void;
}

/** Takes the session's lock on a connection of its own, held until released (or the process dies). */
async function holdSessionLock(pool: Pool, session: string): Promise<SessionLock> {
  const client = await pool.connect();
  try {
    await lockKey(client, SESSION_LOCKS, session);
  } catch (error) {
    client.release();
    throw error;
  }
  let released = false;
  return {
    client,
    release() {
      if (released) return;
      released = true;
      // Destroyed, not returned: the connection still holds the lock.
      client.release(true);
    },
  };
}

/**
 * Cancels the turns (queued or running) of sessions whose process is gone; returns how many.
 * Each is settled as cancelled, and a stop request is recorded as well, so a worker that took one
 * already stops it at its next check instead of answering.
 */
async function cancelOrphanedTurns(
  lock: SessionLock,
  pool: Pool,
  platform: string,
  own: { session: string; by: Requester },
): Promise<number> {
  let cancelled = 0;
  const turns = await unfinishedTurnsOn(pool, platform);
  const sessions = new Map<string, typeof turns>();
  for (const turn of turns) sessions.set(turn.session, [...(sessions.get(turn.session) ?? []), turn]);
  // Advisory locks are re-entrant on the connection that holds them: never test our own.
  sessions.delete(own.session);
  for (const [session, ofSession] of sessions) {
    // A session whose lock is held belongs to a live process (this one, or another terminal).
    if (!(await tryLockKey(lock.client, SESSION_LOCKS, session))) continue;
    try {
      for (const turn of ofSession) {
        await recordStopRequest(pool, turn.id, own.by, STOP_CHANNEL);
        await settleTurn(
          pool,
          { id: turn.id, conversationId: turn.conversation_id },
          {
            status: 'cancelled',
            error: orphanedTurnError(platform),
            deleteCheckpoint: true,
          },
        );
        cancelled++;
      }
    } finally {
      await unlockKey(lock.client, SESSION_LOCKS, session);
    }
  }
  return cancelled;
}
