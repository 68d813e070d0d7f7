import { performance } from 'node:perf_hooks';
import { Logger, run, makeWorkerUtils } from 'graphile-worker';

const silent = new Logger(() => () => undefined);
import { startCountersign } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { ScriptedProvider } from '../src/agent/providers/scripted.ts';
import { enqueueWorkItem } from '../src/queue/enqueue.ts';
import { Priority } from '../src/queue/work-item.ts';
import { RecordingOutbound } from '../test/helpers/recording-outbound.ts';
import { summarize, type Summary } from './stats.ts';

export interface P1Result {
  raw: Summary;
  countersign: Summary;
  ratioP50: number;
}

/** Raw graphile-worker: add_job → task start, one job at a time so we measure latency, not throughput. */
async function rawGraphile(connectionString: string, samples: number): Promise<number[]> {
  const latencies: number[] = [];
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
  try {
    for (let i = 0; i < samples; i++) {
      const started = new Promise<void>((r) => (resolveStart = r));
      const t0 = performance.now();
      await utils.addJob('bench_noop', { i }, { priority: 1 });
      await started;
      latencies.push(performance.now() - t0);
    }
  } finally {
    await utils.release();
    await runner.stop();
  }
  return latencies;
}

/** Countersign: a platform event is enqueued as a work item → the worker starts the turn. */
async function countersign(connectionString: string, samples: number): Promise<number[]> {
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
  const latencies: number[] = [];
  try {
    for (let i = 0; i < samples; i++) {
      let t0 = 0;
      const started = new Promise<void>((resolve) => {
        const onStart = () => {
          latencies.push(performance.now() - t0);
          app.events.off('started', onStart);
          resolve();
        };
        app.events.on('started', onStart);
      });
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
      await started;
      await finished;
    }
  } finally {
    await app.stop();
  }
  return latencies;
}

export async function benchP1(connectionString: string, samples = 200): Promise<P1Result> {
  // Warm both paths up (connections, JIT) before measuring.
  await rawGraphile(connectionString, 20);
  const raw = summarize(await rawGraphile(connectionString, samples));
  const cs = summarize(await countersign(connectionString, samples));
  return { raw, countersign: cs, ratioP50: cs.p50 / raw.p50 };
}
