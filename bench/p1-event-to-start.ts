import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger, run, makeWorkerUtils } from 'graphile-worker';
import { startCountersign } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { ScriptedProvider } from '../src/agent/providers/scripted.ts';
import { enqueueWorkItem } from '../src/queue/turn-lifecycle.ts';
import { Priority } from '../src/core/work-item.ts';
import { RecordingOutbound } from '../test/helpers/recording-outbound.ts';
import { summarize, type Summary } from './stats.ts';

const silent = new Logger(() => () => undefined);

export interface P1Result {
  raw: Summary;
  /** Event enqueued → graphile-worker starts Countersign's task (the same point as the raw baseline). */
  countersign: Summary;
  /** Event enqueued → the turn's state is read and it starts (one more round trip). */
  turnReady: Summary;
  ratioP50: number;
}

/**
 * Both paths get one event at a time, each after the same quiet gap, the way events from people
 * arrive. Firing the next event the moment the previous one started (as a bare loop would) favours
 * whichever path is quicker to go idle: on these VMs a process that slept ~10 ms takes ~1 ms longer
 * to answer its next query than one that is still warm, which would make the comparison one of
 * idle times rather than of the two paths.
 */
const GAP_MS = 10;

interface Sampler {
  /** One event → start; resolves with its latency(ies) in ms once the work it started is done. */
  sample(i: number): Promise<number[]>;
  stop(): Promise<void>;
}

/** Raw graphile-worker: add_job → task start. */
async function rawGraphile(connectionString: string): Promise<Sampler> {
  let resolveStart: (() => void) | undefined;
  const runner = await run({
    connectionString,
    concurrency: 4,
    noHandleSignals: true,
    pollInterval: 1000,
    crontab: '',
    logger: silent,
    taskList: { bench_noop: async () => resolveStart?.() },
  });
  const utils = await makeWorkerUtils({ connectionString, logger: silent });
  return {
    async sample(i) {
      const started = new Promise<void>((r) => (resolveStart = r));
      const t0 = performance.now();
      await utils.addJob('bench_noop', { i }, { priority: 1 });
      await started;
      return [performance.now() - t0];
    },
    async stop() {
      await utils.release();
      await runner.stop();
    },
  };
}

/** Countersign: a platform event is enqueued as a work item → the worker starts the job, then the turn. */
async function countersign(connectionString: string): Promise<Sampler> {
  const config = loadConfig({
    DATABASE_URL: connectionString,
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    AI_PROVIDER: 'scripted',
  });
  const app = await startCountersign(config, {
    role: 'all',
    console: false,
    provider: new ScriptedProvider({ rules: [{ rounds: [{ text: 'ok' }] }] }),
    outbounds: [new RecordingOutbound('bench')],
    log: createLogger('silent'),
  });
  return {
    async sample(i) {
      let t0 = 0;
      const at = (event: 'jobStarted' | 'started') =>
        new Promise<number>((resolve) => app.events.once(event, () => resolve(performance.now() - t0)));
      const jobStarted = at('jobStarted');
      const started = at('started');
      const finished = new Promise<void>((resolve) => app.events.once('finished', () => resolve()));
      t0 = performance.now();
      await enqueueWorkItem(app.pool, {
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: `bench-p1-${i}`,
        requester: { platform: 'bench', userId: 'U1' },
        input: { prompt: 'hi' },
        reply: { platform: 'bench', channel: `c${i}` },
      });
      const latencies = await Promise.all([jobStarted, started]);
      await finished;
      return latencies;
    },
    stop: () => app.stop(),
  };
}

/**
 * The two paths take turns, sample by sample, each on its own database: noise from the rest of the
 * machine then falls on both alike instead of on whichever ran second.
 */
export async function benchP1(connectionString: string, rawConnectionString: string, samples = 200): Promise<P1Result> {
  const raw = await rawGraphile(rawConnectionString);
  const cs = await countersign(connectionString);
  const rawLatencies: number[] = [];
  const job: number[] = [];
  const turn: number[] = [];
  try {
    // Warm both paths up (connections, prepared statements, JIT) before measuring.
    for (let i = 0; i < 20; i++) {
      await raw.sample(-1 - i);
      await cs.sample(-1 - i);
    }
    for (let i = 0; i < samples; i++) {
      rawLatencies.push(...(await raw.sample(i)));
      await sleep(GAP_MS);
      const [jobMs, turnMs] = await cs.sample(i);
      job.push(jobMs!);
      turn.push(turnMs!);
      await sleep(GAP_MS);
    }
  } finally {
    await cs.stop();
    await raw.stop();
  }
  const r = summarize(rawLatencies);
  const j = summarize(job);
  return { raw: r, countersign: j, turnReady: summarize(turn), ratioP50: j.p50 / r.p50 };
}
