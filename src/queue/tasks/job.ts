import type { JobHelpers, Task } from 'graphile-worker';
import type { z } from 'zod';

/**
 * The worker pools of src/queue/runner.ts: interactive work (a person is waiting) never waits
 * behind background work; delivery (showing what a turn already decided, such as its approval card)
 * waits for platforms' rate limits in slots of its own, never in a turn's.
 */
export type WorkerPool = 'interactive' | 'background' | 'delivery';

/** How graphile-worker schedules a task's jobs: every enqueuer, TypeScript or SQL, uses these values. */
export interface JobOptions {
  /** Attempts before graphile-worker gives up on a job. */
  maxAttempts: number;
  /** The job's priority when the task has one; a turn's job takes its work item's priority. */
  priority?: number;
  /** One pending job per key: a newer schedule replaces the waiting one. */
  jobKey?: string;
  jobKeyMode?: 'replace' | 'preserve_run_at';
}

/** What runs a task's jobs, given a payload its schema accepted. */
export type JobHandler<Payload> = (payload: Payload, helpers: JobHelpers) => Promise<void>;

/** One graphile-worker task: its name, the pool that runs it, its payload, its options and its handler. */
export interface JobDefinition<Payload, Deps> {
  name: string;
  pool: WorkerPool;
  payload: z.ZodType<Payload>;
  options: JobOptions;
  /** A cron pattern when the task runs on a schedule (graphile-worker's crontab, in its pool). */
  schedule?: string;
  /**
   * The database functions (migrations/) that add this task's jobs themselves. The task name reaches
   * them as an argument; `max_attempts` is written in their SQL and must equal `options.maxAttempts`
   * (test/queue/job-table.test.ts).
   */
  enqueuedInSqlBy?: readonly string[];
  createHandler(deps: Deps): JobHandler<Payload>;
}

// Jobs of different payloads and dependencies live in one table; each checks its own payload.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyJob = JobDefinition<any, any>;

export function defineJob<Payload, Deps>(job: JobDefinition<Payload, Deps>): JobDefinition<Payload, Deps> {
  return job;
}

/** The graphile-worker task of a job: the payload is checked against the job's schema before its handler runs. */
export function taskOf<Payload, Deps>(job: JobDefinition<Payload, Deps>, deps: Deps): Task {
  const handle = job.createHandler(deps);
  return (raw, helpers) => handle(job.payload.parse(raw), helpers);
}

/** A scheduled job's graphile-worker crontab line, its options from the job's own. */
export function crontabLine(job: AnyJob): string {
  if (!job.schedule) throw new Error(`${job.name} has no schedule`);
  const { maxAttempts, priority, jobKey, jobKeyMode } = job.options;
  const options = new URLSearchParams();
  if (priority !== undefined) options.set('priority', String(priority));
  options.set('max', String(maxAttempts));
  if (jobKey !== undefined) options.set('jobKey', jobKey);
  if (jobKeyMode !== undefined) options.set('jobKeyMode', jobKeyMode);
  return `${job.schedule} ${job.name} ?${options.toString()}`;
}
