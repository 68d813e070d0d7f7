/**
 * Holds every graphile-worker job the app adds until the test releases it, so one step of a turn
 * (a job) runs alone between two coverage snapshots. Without it the worker picks the job up within
 * milliseconds of the commit and races the acknowledgement the test waits for.
 *
 * Only the test's own database is touched: a BEFORE INSERT trigger moves a new job's `run_at` to
 * 'infinity' (graphile-worker runs a job once `run_at <= now()`), and `release()` sets it back to
 * now; the worker finds it at its next poll (WORKER_POLL_INTERVAL_MS).
 */
import type pg from 'pg';

type Pool = Pick<pg.Pool, 'query'>;

/** Housekeeping's crontab adds a job a minute, whichever step that falls in: it stays held, uncounted. */
const NOT_HOUSEKEEPING = `task_id NOT IN (SELECT id FROM graphile_worker._private_tasks WHERE identifier LIKE '%housekeeping%')`;

export async function holdNewJobs(pool: Pool): Promise<void> {
  await pool.query(`
    CREATE FUNCTION public.running_map_hold_job() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.run_at := 'infinity';
      RETURN NEW;
    END $$;
    CREATE TRIGGER running_map_hold_job BEFORE INSERT ON graphile_worker._private_jobs
      FOR EACH ROW EXECUTE FUNCTION public.running_map_hold_job();
  `);
}

/** How many jobs wait to be released. */
export async function heldJobs(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE run_at = 'infinity' AND ${NOT_HOUSEKEEPING}`,
  );
  return rows[0]?.n ?? 0;
}

export async function releaseJobs(pool: Pool): Promise<void> {
  await pool.query(
    `UPDATE graphile_worker._private_jobs SET run_at = now() WHERE run_at = 'infinity' AND ${NOT_HOUSEKEEPING}`,
  );
}

/** True when no job runs and none is runnable: the released ones are done. */
export async function jobsIdle(pool: Pool): Promise<boolean> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE locked_at IS NOT NULL OR run_at <= now()`,
  );
  return rows[0]?.n === 0;
}
