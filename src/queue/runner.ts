import { EventEmitter } from 'node:events';
import { Logger as GraphileLogger, run, type Runner, type TaskList, type WorkerEvents } from 'graphile-worker';
import type { Logger } from 'pino';
import { createPool, type Pool } from '../db/pool.ts';
import { BACKGROUND_TASK, INTERACTIVE_TASK } from './work-item.ts';

export interface QueueRunnerOptions {
  connectionString: string;
  log: Logger;
  /** Slots for interactive work (CRITICAL and HIGH): background work can never occupy them. */
  interactiveConcurrency: number;
  /** Slots for background work (NORMAL, LOW, IDLE). */
  backgroundConcurrency: number;
  pollIntervalMs: number;
  /** How long running turns get to reach a checkpoint on shutdown before they are aborted. */
  shutdownGraceMs: number;
  workItemTask: TaskList[string];
  /** Extra interactive tasks (showing approval cards). */
  interactiveTasks?: TaskList;
  /** Extra background tasks (housekeeping). */
  backgroundTasks?: TaskList;
  /** graphile-worker crontab for the background pool (periodic housekeeping). */
  crontab?: string;
  /** Called with each graphile-worker pool id, which is what jobs are locked under. */
  onPoolCreated: (poolId: string) => void;
  /** Called when a pool stops on its own (a fatal error): the process should shut down and restart. */
  onFatal?: (error: unknown) => void;
}

export interface QueueRunner {
  readonly running: boolean;
  /** Stops taking jobs, waits for running ones (aborting them after a grace period), closes connections. */
  stop(): Promise<void>;
}

function graphileLogger(log: Logger): GraphileLogger {
  return new GraphileLogger((scope) => (level, message, meta) => {
    const target = log.child({
      component: 'graphile-worker',
      ...(scope.taskIdentifier ? { task: scope.taskIdentifier } : {}),
    });
    const fields = meta ?? {};
    if (level === 'error') target.error(fields, message);
    else if (level === 'warning') target.warn(fields, message);
    // graphile-worker's info lines (every completed job) are routine; keep them out of the default log.
    else target.debug(fields, message);
  });
}

/**
 * Runs two graphile-worker pools against one database: one for interactive work, one for background
 * work. A person's turn (CRITICAL) therefore starts at once even while every background slot is busy
 * and thousands of LOW jobs wait; graphile-worker's priority order alone can't do that, because a
 * busy slot isn't preempted.
 */
export async function startQueueRunner(options: QueueRunnerOptions): Promise<QueueRunner> {
  const { log } = options;
  // graphile-worker gets its own connections, so turn queries can never starve job fetching.
  const pool: Pool = createPool(
    options.connectionString,
    options.interactiveConcurrency + options.backgroundConcurrency + 4,
    log,
  );
  const events: WorkerEvents = new EventEmitter() as WorkerEvents;
  events.on('pool:create', ({ workerPool }) => options.onPoolCreated(workerPool.id));
  const common = {
    pgPool: pool,
    noHandleSignals: true,
    pollInterval: options.pollIntervalMs,
    logger: graphileLogger(log),
    events,
    gracefulShutdownAbortTimeout: options.shutdownGraceMs,
    // Countersign schedules periodic work itself; no crontab file.
    crontab: '',
    // Completions and failures go through graphile-worker's batcher (flushed on the next tick, so no
    // later): unbatched, a failJob that loses its database is a promise nobody catches, which took
    // the whole process down when a task ended after shutdown began; batched, graphile-worker waits
    // for pending ones on shutdown and handles their errors. Under load, concurrent completions also
    // share a round trip.
    preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
  };
  const runners: Runner[] = [];
  try {
    runners.push(
      await run({
        ...common,
        concurrency: options.interactiveConcurrency,
        taskList: { [INTERACTIVE_TASK]: options.workItemTask, ...options.interactiveTasks },
      }),
    );
    runners.push(
      await run({
        ...common,
        concurrency: options.backgroundConcurrency,
        taskList: { [BACKGROUND_TASK]: options.workItemTask, ...options.backgroundTasks },
        crontab: options.crontab ?? '',
      }),
    );
  } catch (error) {
    await Promise.allSettled(runners.map((r) => r.stop()));
    await pool.end();
    throw error;
  }
  let running = true;
  for (const runner of runners) {
    runner.promise.then(
      () => {
        if (running) options.onFatal?.(new Error('a worker pool stopped unexpectedly'));
      },
      (error: unknown) => {
        if (!running) return;
        running = false;
        log.error({ err: error }, 'a worker pool stopped unexpectedly');
        options.onFatal?.(error);
      },
    );
  }
  return {
    get running() {
      return running;
    },
    async stop() {
      if (!running && runners.length === 0) return;
      running = false;
      await Promise.allSettled(runners.splice(0).map((r) => r.stop()));
      await pool.end();
    },
  };
}
