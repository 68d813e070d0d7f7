import type { Pool, PoolClient } from '../../db/pool.ts';
import { lockKey, tryLockKey, unlockKey } from '../../db/advisory-locks.ts';
import type { Requester } from '../../core/person.ts';
import { recordStopRequest, settleTurn, unfinishedTurnsOn } from '../../queue/turn-lifecycle.ts';
import { STOP_CHANNEL } from '../../queue/stop-requests.ts';

/**
 * A console turn is asked in one terminal session and answered there; when the process dies, nobody
 * is left to read its answer. Left alone, its job is released to the next run (once the dead
 * process's heartbeat is stale) and answered there — by whatever model that run uses, into a session
 * nobody sees. So each session holds a Postgres advisory lock for as long as its process lives
 * (Postgres drops it with the connection, however the process ended), and a starting session
 * cancels the unfinished console turns of every session whose lock is free.
 */

/** The first key of the two-key advisory locks: console sessions (ASCII "cons"); the second is the session's hash. */
const CONSOLE_SESSION_LOCKS = 0x636f6e73;

/** What a console turn that outlived its session is settled with. */
const ORPHANED_TURN_ERROR = 'its console session ended before the turn finished';

/** A live session's hold on its lock: one pooled connection, kept until `release`. */
export interface SessionLock {
  client: PoolClient;
  release(): void;
}

/** Takes the session's lock on a connection of its own, held until released (or the process dies). */
export async function holdSessionLock(pool: Pool, session: string): Promise<SessionLock> {
  const client = await pool.connect();
  try {
    await lockKey(client, CONSOLE_SESSION_LOCKS, session);
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
 * Cancels the console turns (queued or running) of sessions whose process is gone; returns how many.
 * Each is settled as cancelled, and a stop request is recorded as well, so a worker that took one
 * already stops it at its next check instead of answering.
 */
export async function cancelOrphanedTurns(
  lock: SessionLock,
  pool: Pool,
  own: { session: string; by: Requester },
): Promise<number> {
  let cancelled = 0;
  const turns = await unfinishedTurnsOn(pool, 'console');
  const sessions = new Map<string, typeof turns>();
  for (const turn of turns) sessions.set(turn.session, [...(sessions.get(turn.session) ?? []), turn]);
  // Advisory locks are re-entrant on the connection that holds them: never test our own.
  sessions.delete(own.session);
  for (const [session, ofSession] of sessions) {
    // A session whose lock is held belongs to a live process (this one, or another terminal).
    if (!(await tryLockKey(lock.client, CONSOLE_SESSION_LOCKS, session))) continue;
    try {
      for (const turn of ofSession) {
        await recordStopRequest(pool, turn.id, own.by, STOP_CHANNEL);
        await settleTurn(
          pool,
          { id: turn.id, conversationId: turn.conversation_id },
          {
            status: 'cancelled',
            error: ORPHANED_TURN_ERROR,
            deleteCheckpoint: true,
          },
        );
        cancelled++;
      }
    } finally {
      await unlockKey(lock.client, CONSOLE_SESSION_LOCKS, session);
    }
  }
  return cancelled;
}
