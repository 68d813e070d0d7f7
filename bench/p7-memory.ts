import { startCountersign } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { ScriptedProvider } from '../src/agent/providers/scripted.ts';
import { enqueueWorkItem } from '../src/queue/turn-lifecycle.ts';
import { Priority } from '../src/core/work-item.ts';
import { RecordingOutbound } from '../test/helpers/recording-outbound.ts';

export interface P7Result {
  conversations: number;
  streamingAtOnce: number;
  rssBeforeMb: number;
  rssInFlightMb: number;
  /** Growth per 1,000 accepted, unfinished conversations (most wait in Postgres, not in memory). */
  mbPer1000: number;
  /** Growth per streaming slot, scaled to 1,000 turns streaming at once. */
  mbPer1000Streaming: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Resident memory with 1,000 conversations in flight: every one accepted and unfinished, as many
 * streaming at once as the worker has slots, the rest waiting durably in Postgres.
 */
export async function benchP7(connectionString: string, conversations = 1000, slots = 50): Promise<P7Result> {
  const config = loadConfig({
    DATABASE_URL: connectionString,
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    AI_PROVIDER: 'scripted',
    WORKER_CONCURRENCY: String(slots),
    SHUTDOWN_GRACE_SECONDS: '0',
  });
  const app = await startCountersign(config, {
    role: 'all',
    console: false,
    provider: new ScriptedProvider({ rules: [{ rounds: [{ text: 'x'.repeat(2000), chunkSize: 10, delayMs: 500 }] }] }),
    outbounds: [new RecordingOutbound('bench', { minEditIntervalMs: 1000 })],
    log: createLogger('silent'),
  });
  try {
    globalThis.gc?.();
    await sleep(500);
    const before = process.memoryUsage().rss;
    for (let i = 0; i < conversations; i++) {
      await enqueueWorkItem(app.pool, {
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: `p7-${i}`,
        requester: { platform: 'bench', userId: 'U1' },
        input: { prompt: `conversation ${i}` },
        reply: { platform: 'bench', channel: `p7-${i}` },
      });
    }
    // Let every slot reach its steady streaming state.
    for (;;) {
      const { rows } = await app.pool.query(
        `SELECT count(*)::int AS n FROM countersign.work_items WHERE status = 'running'`,
      );
      if (rows[0].n >= Math.min(slots, conversations)) break;
      await sleep(200);
    }
    await sleep(2000);
    globalThis.gc?.();
    const during = process.memoryUsage().rss;
    const mb = (b: number) => b / 1024 / 1024;
    return {
      conversations,
      streamingAtOnce: slots,
      rssBeforeMb: mb(before),
      rssInFlightMb: mb(during),
      mbPer1000: Math.max(0, (mb(during - before) * 1000) / conversations),
      mbPer1000Streaming: Math.max(0, (mb(during - before) * 1000) / Math.min(slots, conversations)),
    };
  } finally {
    await app.stop();
  }
}
