import type { TaskList } from 'graphile-worker';
import { Priority } from '../../core/work-item.ts';
import { backgroundTurnJob } from './background-turn.ts';
import { housekeepingJob } from './housekeeping.ts';
import { interactiveTurnJob } from './interactive-turn.ts';
import { crontabLine, taskOf, type AnyJob, type WorkerPool } from './job.ts';
import { showApprovalCardJob } from './show-approval-card.ts';
import { shareChangeDiffJob } from './share-change-diff.ts';

/**
 * Every graphile-worker task Countersign runs, one module each: the runner registers them from here
 * and every enqueuer takes names and options from here. The database adds turn jobs itself (each
 * job's `enqueuedInSqlBy`), with the same values: test/queue/job-table.test.ts checks them.
 */
export const JOBS = {
  /** Also enqueued by countersign.enqueue_work_item and countersign.advance_conversation. */
  interactiveTurn: interactiveTurnJob,
  /** Also enqueued by countersign.enqueue_work_item and countersign.advance_conversation. */
  backgroundTurn: backgroundTurnJob,
  showApprovalCard: showApprovalCardJob,
  shareChangeDiff: shareChangeDiffJob,
  housekeeping: housekeepingJob,
} as const;

type Jobs = typeof JOBS;

/** What each job's handler is built from, by the job's key in `JOBS`. */
export type JobDependencies = { [K in keyof Jobs]: Parameters<Jobs[K]['createHandler']>[0] };

/** What one worker pool runs: its tasks and its schedule. */
interface PoolTasks {
  taskList: TaskList;
  /** graphile-worker crontab lines ('' when the pool runs nothing on a schedule). */
  crontab: string;
}

/**
 * Each worker pool's tasks: the jobs of `JOBS` by the pool they name, and the express pool's, which is the interactive
 * turn task alone (src/queue/runner.ts: it takes only turns of a place with nothing else outstanding).
 */
export type WorkerPoolTasks = Record<WorkerPool, PoolTasks> & { express: PoolTasks };

/** The tasks and schedules of the worker pools, every job of `JOBS` in the pool it names. */
export function workerPoolTasks(deps: JobDependencies): WorkerPoolTasks {
  const pools: Record<WorkerPool, PoolTasks> = {
    interactive: { taskList: {}, crontab: '' },
    background: { taskList: {}, crontab: '' },
    delivery: { taskList: {}, crontab: '' },
  };
  for (const key of Object.keys(JOBS) as Array<keyof Jobs>) {
    const job: AnyJob = JOBS[key];
    const pool = pools[job.pool];
    pool.taskList[job.name] = taskOf(job, deps[key]);
    if (job.schedule) pool.crontab = [pool.crontab, crontabLine(job)].filter(Boolean).join('\n');
  }
  const turn = JOBS.interactiveTurn.name;
  return { ...pools, express: { taskList: { [turn]: pools.interactive.taskList[turn]! }, crontab: '' } };
}

/** The turn task that runs a work item of this priority: interactive up to HIGH, background below. */
export function turnJobFor(priority: number): AnyJob {
  return priority <= Priority.HIGH ? JOBS.interactiveTurn : JOBS.backgroundTurn;
}
