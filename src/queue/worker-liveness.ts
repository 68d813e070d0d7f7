import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Pool, Queryable } from '../db/pool.ts';
import { metrics } from '../metrics.ts';

/**
 * Released jobs are ready at once, but force_unlock_workers sends no notification, so live workers
 * would only find them at their next poll. Announcing them the way graphile_worker.add_job announces
 * new jobs (its `jobs:insert` channel, `count` = how many) wakes that many idle workers now. Reads
 * the `released` CTE of the statement it is part of (counted in the statement's snapshot, before
 * the unlock).
 */
const NUDGE_RELEASED = `(SELECT pg_notify('jobs:insert', json_build_object('count', n)::text)
                          FROM released WHERE n > 0) AS nudged`;

/**
 * Worker heartbeats. graphile-worker locks a job to its worker pool and, if that process dies, keeps
 * the job locked for 4 hours. Each Countersign process records a heartbeat and the ids of its pools;
 * every live process sweeps for processes whose heartbeat is stale and releases their jobs with
 * graphile_worker.force_unlock_workers, so a dead worker's turns resume elsewhere within seconds.
 */
export class WorkerLiveness {
  readonly processId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  readonly #pool: Pool;
  readonly #log: Logger;
  readonly #role: string;
  readonly #heartbeatMs: number;
  readonly #deadAfterSeconds: number;
  readonly #knownSlots = new Set<string>();
  /** Pools created while the database was away: recorded at the next heartbeat that reaches it. */
  readonly #unrecorded = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #beating: Promise<void> | undefined;
  #onFenced: () => void;

  constructor(options: {
    pool: Pool;
    log: Logger;
    role: string;
    heartbeatSeconds: number;
    deadAfterSeconds: number;
    /** Called when another process declared this one dead and released its jobs. */
    onFenced: () => void;
  }) {
    this.#pool = options.pool;
    this.#log = options.log;
    this.#role = options.role;
    this.#heartbeatMs = options.heartbeatSeconds * 1000;
    this.#deadAfterSeconds = options.deadAfterSeconds;
    this.#onFenced = options.onFenced;
  }

  async start(): Promise<void> {
    await this.#register();
    this.#timer = setInterval(() => {
      this.#beating ??= this.#beat().finally(() => {
        this.#beating = undefined;
      });
    }, this.#heartbeatMs);
    this.#timer.unref();
  }

  async #register(): Promise<void> {
    await this.#pool.query(
      `INSERT INTO countersign.worker_processes (id, hostname, pid, role) VALUES ($1, $2, $3, $4)
       ON CONFLICT (id) DO UPDATE SET last_seen_at = now()`,
      [this.processId, hostname(), process.pid, this.#role],
    );
    for (const slot of this.#knownSlots) await this.#insertSlot(slot);
  }

  async #insertSlot(workerId: string): Promise<void> {
    await this.#pool.query(
      `INSERT INTO countersign.worker_slots (worker_id, process_id) VALUES ($1, $2) ON CONFLICT (worker_id) DO NOTHING`,
      [workerId, this.processId],
    );
  }

  /** Records that graphile-worker locks jobs under `workerId` in this process. Idempotent and cheap. */
  async claimSlot(workerId: string): Promise<void> {
    if (this.#knownSlots.has(workerId)) return;
    try {
      await this.#insertSlot(workerId);
    } catch (error) {
      // Unrecorded, a dead process's jobs under this pool would stay locked for good.
      this.#unrecorded.add(workerId);
      throw error;
    }
    this.#unrecorded.delete(workerId);
    this.#knownSlots.add(workerId);
  }

  async #beat(): Promise<void> {
    try {
      const { rowCount } = await this.#pool.query(
        'UPDATE countersign.worker_processes SET last_seen_at = now() WHERE id = $1',
        [this.processId],
      );
      if (rowCount === 1) metrics.heartbeat.setToCurrentTime();
      for (const slot of [...this.#unrecorded]) await this.claimSlot(slot);
      if (rowCount === 0) {
        this.#log.error(
          { processId: this.processId },
          'this worker was declared dead by another process; aborting its turns',
        );
        this.#onFenced();
        await this.#register();
      }
      await this.sweep();
    } catch (error) {
      this.#log.warn({ err: error }, 'worker heartbeat failed (database unreachable?)');
    }
  }

  /** Releases the jobs of every process whose heartbeat is stale. Returns the dead process ids. */
  async sweep(): Promise<string[]> {
    const { rows } = await this.#pool.query<{ dead: string[] | null }>(
      `WITH dead AS (
         DELETE FROM countersign.worker_processes
         WHERE last_seen_at < now() - make_interval(secs => $1) AND id <> $2
         RETURNING id
       ), slots AS (
         SELECT worker_id FROM countersign.worker_slots WHERE process_id IN (SELECT id FROM dead)
       ), released AS (
         SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE locked_by IN (SELECT worker_id FROM slots)
       )
       SELECT (SELECT array_agg(id) FROM dead) AS dead,
              graphile_worker.force_unlock_workers(coalesce((SELECT array_agg(worker_id) FROM slots), '{}')),
              ${NUDGE_RELEASED}`,
      [this.#deadAfterSeconds, this.processId],
    );
    const dead = rows[0]?.dead ?? [];
    if (dead.length > 0) this.#log.warn({ dead }, 'released the jobs of dead worker processes');
    return dead;
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.#beating;
    // Leaving: release anything still locked under our pools (the pools have stopped by now), then
    // remove our heartbeat, so nobody waits for it to go stale.
    await this.#pool
      .query(
        `WITH gone AS (DELETE FROM countersign.worker_processes WHERE id = $1 RETURNING id),
         slots AS (SELECT array_agg(worker_id) AS ids FROM countersign.worker_slots WHERE process_id = $1),
         released AS (
           SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE locked_by = ANY ((SELECT ids FROM slots)::text[])
         )
         SELECT graphile_worker.force_unlock_workers(coalesce((SELECT ids FROM slots), '{}')),
                (SELECT count(*) FROM gone) AS removed,
                ${NUDGE_RELEASED}`,
        [this.processId],
      )
      .catch((error: unknown) => this.#log.warn({ err: error }, 'could not remove worker heartbeat'));
  }
}

/**
 * Jobs ready to run and not taken, per priority class (the /metrics gauge of waiting jobs). A turn's
 * job is ranked inside its class (CRITICAL 1–9, HIGH 10–99, …; migration 028), so the rank is folded
 * back into its class: a gauge per rank would say nothing an operator acts on.
 */
export async function countWaitingJobs(db: Queryable): Promise<Array<{ priority: number; n: number }>> {
  const { rows } = await db.query<{ priority: number; n: number }>(
    `SELECT CASE WHEN priority >= 1 THEN (10 ^ floor(log(priority::numeric)))::int ELSE priority END AS priority,
            count(*)::int AS n
       FROM graphile_worker.jobs
      WHERE locked_at IS NULL AND run_at <= now() AND attempts < max_attempts GROUP BY 1`,
  );
  return rows;
}

/** Processes with a heartbeat on record (the /metrics gauge of live workers). */
export async function countWorkerProcesses(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM countersign.worker_processes`);
  return rows[0]?.n ?? 0;
}
