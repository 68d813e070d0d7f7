import { EventEmitter } from 'node:events';
import { Logger as GraphileLogger, run, type Runner, type RunnerOptions, type WorkerEvents } from 'graphile-worker';
import type { Logger } from 'pino';
import { createPool, type Pool } from '../db/pool.ts';
import type { WorkerPoolTasks } from './tasks/index.ts';
import { watchForStuckPools } from './poisoned-pool.ts';

export interface QueueRunnerOptions {
  connectionString: string;
  log: Logger;
  /** Slots for interactive work (CRITICAL and HIGH): background work can never occupy them. */
  interactiveConcurrency: number;
  /** Slots for background work (NORMAL, LOW, IDLE). */
  backgroundConcurrency: number;
  /**
   * Slots only for interactive turns whose place (platform + workspace) had nothing else outstanding
   * when they were enqueued (jobs without the `backlog` flag, migration 028); 0 runs no express pool.
   */
  expressConcurrency: number;
  /** Slots for delivery jobs (an approval card's post), which mostly wait on platforms' rate limits. */
  deliveryConcurrency: number;
  pollIntervalMs: number;
  /** How long running turns get to reach a checkpoint on shutdown before they are aborted. */
  shutdownGraceMs: number;
  /** Each pool's tasks and schedule: every job of the table in src/queue/tasks/index.ts (`workerPoolTasks`). */
  tasks: WorkerPoolTasks;
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

/**
 * How long stopping waits for graphile-worker's connections to be returned. After a pool died on a
 * database outage, a connection can stay checked out for good (seen in the chaos run: its LISTEN
 * client reconnecting after the pool had shut down), and `pool.end()` then never resolves. The
 * caller must get past it: the process leaves by releasing its job locks and heartbeat (worker
 * liveness), or, failing that, by exiting so that its stale heartbeat releases them.
 */
const POOL_END_TIMEOUT_MS = 5000;

async function endWithin(pool: Pool, ms: number, log: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
    timer.unref();
  });
  const outcome = await Promise.race([pool.end().then(() => 'ended' as const), timedOut]);
  clearTimeout(timer);
  if (outcome === 'timeout') log.warn({ waitedMs: ms }, 'graphile-worker connections were not returned; leaving them');
}

function graphileLogger(log: Logger): GraphileLogger {
  // A child logger costs its redaction setup (~10 µs); graphile-worker asks for one per job scope,
  // and most of their lines are debug ones the level drops. Made once per scope, and only to log.
  return new GraphileLogger((scope) => {
    let target: Logger | undefined;
    return (level, message, meta) => {
      const pinoLevel = level === 'error' ? 'error' : level === 'warning' ? 'warn' : 'debug';
      if (!log.isLevelEnabled(pinoLevel)) return;
      target ??= log.child({
        component: 'graphile-worker',
        ...(scope.taskIdentifier ? { task: scope.taskIdentifier } : {}),
      });
      emit(target, level, message, meta ?? {});
    };
  });
}

function emit(target: Logger, level: string, message: string, fields: object): void {
  if (level === 'error') target.error(fields, message);
  else if (level === 'warning') target.warn(fields, message);
  // graphile-worker's info lines (every completed job) are routine; keep them out of the default log.
  else target.debug(fields, message);
}

/** A turn job whose place already had work outstanding when it was enqueued (migration 028). */
const BACKLOG_FLAG = 'backlog';

/**
 * The pools' graphile-worker options: interactive, background, delivery, then express when it has slots. The
 * express pool runs only the interactive turn task, and never a job flagged as a place's backlog:
 * when one place's burst holds every interactive slot, another place's first turn still starts at
 * once instead of waiting for one of those turns to end (bench P10). It takes no crontab, so no
 * scheduled job runs twice.
 */
function poolSpecs(options: QueueRunnerOptions, pool: Pool, events: WorkerEvents): RunnerOptions[] {
  const common = {
    pgPool: pool,
    noHandleSignals: true,
    pollInterval: options.pollIntervalMs,
    logger: graphileLogger(options.log),
    events,
    gracefulShutdownAbortTimeout: options.shutdownGraceMs,
    // Completions and failures go through graphile-worker's batcher (flushed on the next tick, so no
    // later): unbatched, a failJob that loses its database is a promise nobody catches, which took
    // the whole process down when a task ended after shutdown began; batched, graphile-worker waits
    // for pending ones on shutdown and handles their errors. Under load, concurrent completions also
    // share a round trip.
    preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
  };
  // Countersign's schedules come from its job table, never from a crontab file.
  const { interactive, background, delivery, express } = options.tasks;
  const specs: RunnerOptions[] = [
    {
      ...common,
      concurrency: options.interactiveConcurrency,
      taskList: interactive.taskList,
      crontab: interactive.crontab,
    },
    {
      ...common,
      concurrency: options.backgroundConcurrency,
      taskList: background.taskList,
      crontab: background.crontab,
    },
    {
      ...common,
      concurrency: options.deliveryConcurrency,
      taskList: delivery.taskList,
      crontab: delivery.crontab,
    },
  ];
  if (options.expressConcurrency > 0) {
    specs.push({
      ...common,
      concurrency: options.expressConcurrency,
      taskList: express.taskList,
      forbiddenFlags: [BACKLOG_FLAG],
    });
  }
  return specs;
}

/**
 * Runs graphile-worker pools against one database: one for interactive work, one for background
 * work, one for delivery (cards waiting on platforms' rate limits), and the express pool. A person's
 * turn (CRITICAL) therefore starts at once even while every background slot is busy and thousands of
 * LOW jobs wait; graphile-worker's priority order alone can't do that, because a busy slot isn't
 * preempted.
 */
export async function startQueueRunner(options: QueueRunnerOptions): Promise<QueueRunner> {
  const { log } = options;
  // graphile-worker gets its own connections, so turn queries can never starve job fetching.
  const pool: Pool = createPool(
    options.connectionString,
    options.interactiveConcurrency +
      options.backgroundConcurrency +
      options.expressConcurrency +
      options.deliveryConcurrency +
      4,
    log,
  );
  const events: WorkerEvents = new EventEmitter() as WorkerEvents;
  // Which runner a pool belongs to, so a stuck pool can be replaced by its own kind.
  const poolOwner = new Map<string, number>();
  let creating = -1;
  events.on('pool:create', ({ workerPool }) => {
    poolOwner.set(workerPool.id, creating);
    options.onPoolCreated(workerPool.id);
  });
  // A pool that could not record a job's completion or failure (the database went away at that
  // moment) declares itself inconsistent and shuts down; its runner's promise can then stay pending
  // for good (seen in the chaos run), so waiting for it would leave this process heartbeating with
  // no pool running the jobs it holds. The fatal error itself is the signal to leave.
  events.on('pool:fatalError', ({ error, action }) => {
    log.error({ err: error, action }, 'a worker pool failed');
    options.onFatal?.(error);
  });
  const specs = poolSpecs(options, pool, events);
  let running = true;
  /** Runners replaced because their pool was stuck: their ending is expected. */
  const retired = new Set<Runner>();
  const supervise = (runner: Runner) =>
    runner.promise.then(
      () => {
        if (running && !retired.has(runner)) options.onFatal?.(new Error('a worker pool stopped unexpectedly'));
      },
      (error: unknown) => {
        if (!running || retired.has(runner)) return;
        running = false;
        log.error({ err: error }, 'a worker pool stopped unexpectedly');
        options.onFatal?.(error);
      },
    );
  const startRunner = async (index: number): Promise<Runner> => {
    creating = index;
    // A fresh options object: graphile-worker caches what it derives from one (its task ids too).
    const runner = await run({ ...specs[index]! });
    supervise(runner);
    return runner;
  };
  const runners: Runner[] = [];
  try {
    for (let index = 0; index < specs.length; index++) runners.push(await startRunner(index));
  } catch (error) {
    running = false;
    await Promise.allSettled(runners.map((r) => r.stop()));
    await pool.end();
    throw error;
  }
  const unwatch = watchForStuckPools(events, pool, (poolId) => {
    const index = poolOwner.get(poolId);
    const old = index === undefined ? undefined : runners[index];
    if (index === undefined || !old || !running) return;
    log.warn({ poolId }, 'a worker pool keeps failing to fetch jobs although the database answers; replacing it');
    retired.add(old);
    void startRunner(index).then(
      (fresh) => {
        if (!running) return void fresh.stop().catch(() => undefined);
        runners[index] = fresh;
        void old.stop().catch(() => undefined);
      },
      (error: unknown) => {
        log.error({ err: error }, 'could not replace a stuck worker pool');
        options.onFatal?.(error);
      },
    );
  });
  return {
    get running() {
      return running;
    },
    async stop() {
      if (!running && runners.length === 0) return;
      running = false;
      unwatch();
      await Promise.allSettled([...runners.splice(0), ...retired].map((r) => r.stop()));
      await endWithin(pool, POOL_END_TIMEOUT_MS, log);
    },
  };
}
