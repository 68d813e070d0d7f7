import type { WorkerEvents } from 'graphile-worker';
import type { Pool } from '../db/pool.ts';

/** How long a pool must fail every job fetch, with the database answering meanwhile, to count as stuck. */
const STUCK_POOL_AFTER_MS = 3_000;

/**
 * Watches graphile-worker pools for one failure mode: a pool whose job fetches keep failing after the
 * database is back. graphile-worker caches the lookup of its task ids as a promise; when that first
 * lookup hits a database blip (a worker started during an outage), the rejected promise stays cached
 * and every later fetch fails with the same error, forever, with no fatal error. `onStuck` is told
 * the pool id once the pool has failed every fetch for `STUCK_POOL_AFTER_MS` and failed again after a
 * probe of the database succeeded; the caller replaces the pool (a new one looks its task ids up again).
 */
export function watchForStuckPools(
  events: WorkerEvents,
  db: Pool,
  onStuck: (poolId: string) => void,
  stuckAfterMs = STUCK_POOL_AFTER_MS,
): () => void {
  const failingSince = new Map<string, number>();
  const databaseAnsweredAt = new Map<string, number>();
  const probing = new Set<string>();
  const reported = new Set<string>();
  const healthy = (poolId: string) => {
    failingSince.delete(poolId);
    databaseAnsweredAt.delete(poolId);
  };
  const onError = ({ worker }: { worker: { workerPool: { id: string } } }) => {
    const poolId = worker.workerPool.id;
    const now = Date.now();
    const since = failingSince.get(poolId) ?? now;
    failingSince.set(poolId, since);
    if (now - since < stuckAfterMs || reported.has(poolId)) return;
    const answered = databaseAnsweredAt.get(poolId);
    if (answered !== undefined && answered > since && answered < now) {
      reported.add(poolId);
      onStuck(poolId);
      return;
    }
    if (probing.has(poolId)) return;
    probing.add(poolId);
    db.query('SELECT 1')
      .then(
        () => databaseAnsweredAt.set(poolId, Date.now()),
        () => undefined,
      )
      .finally(() => probing.delete(poolId));
  };
  const onFetched = ({ worker }: { worker: { workerPool: { id: string } } }) => healthy(worker.workerPool.id);
  events.on('worker:getJob:error', onError);
  events.on('worker:getJob:empty', onFetched);
  events.on('job:start', onFetched);
  return () => {
    events.off('worker:getJob:error', onError);
    events.off('worker:getJob:empty', onFetched);
    events.off('job:start', onFetched);
  };
}
