import { performance } from 'node:perf_hooks';
import { startCountersign } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { ScriptedProvider } from '../src/agent/providers/scripted.ts';
import { ReplyStream } from '../src/reply/reply-stream.ts';
import { enqueueWorkItem } from '../src/queue/turn-lifecycle.ts';
import { Priority } from '../src/core/work-item.ts';
import { HttpChatOutbound, HttpChatPlatform } from '../test/fakes/chat/http-chat-platform.ts';
import { postgresCpuMs, processCpuMs } from './cpu.ts';

export interface P4Result {
  /** cpuMsPerTurn is this process's CPU; withPostgresCpuMsPerTurn adds the database's. */
  durable: { turnsPerSecond: number; cpuMsPerTurn: number; withPostgresCpuMsPerTurn: number; turns: number };
  direct: { turnsPerSecond: number; cpuMsPerTurn: number; turns: number };
  cpuRatio: number;
}

const INSTANT = { rules: [{ rounds: [{ text: 'instant answer', chunkSize: 100 }] }] };

const cpuMs = processCpuMs;
/** Platform events being enqueued at once, as an ingress handles deliveries. */
const INGRESS_CONCURRENCY = 8;

/**
 * The minimal direct bot: the same scripted model and the same outbound, the same reply streaming,
 * but no queue and no persistence — what the turn costs without durability.
 */
async function directBot(chatUrl: string, turns: number): Promise<P4Result['direct']> {
  const provider = new ScriptedProvider(INSTANT);
  const outbound = new HttpChatOutbound(chatUrl, 'bench');
  const log = createLogger('silent');
  const cpu0 = cpuMs();
  const t0 = performance.now();
  const inFlight = new Set<Promise<void>>();
  for (let i = 0; i < turns; i++) {
    const turn = (async () => {
      const sink = new ReplyStream(outbound, { platform: 'bench', channel: `d${i}` }, { log });
      const round = await provider.streamRound(
        { system: 'x', messages: [{ role: 'user', text: `hi ${i}` }], tools: [], maxTokens: 100 },
        { onText: (d) => sink.append(d), onRoundRestart: () => sink.restartRound() },
        new AbortController().signal,
      );
      await sink.finish(round.text);
    })();
    inFlight.add(turn);
    void turn.finally(() => inFlight.delete(turn));
    if (inFlight.size >= 32) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  const seconds = (performance.now() - t0) / 1000;
  return { turns, turnsPerSecond: turns / seconds, cpuMsPerTurn: (cpuMs() - cpu0) / turns };
}

/**
 * The durable path: every turn enqueued on Postgres, run by the worker pools, persisted. `env` adds
 * configuration (a policy with budgets: bench/spend.ts).
 */
export async function durable(
  connectionString: string,
  chatUrl: string,
  turns: number,
  env: Record<string, string> = {},
): Promise<P4Result['durable']> {
  const config = loadConfig({
    DATABASE_URL: connectionString,
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    AI_PROVIDER: 'scripted',
    WORKER_CONCURRENCY: '16',
    DATABASE_POOL_SIZE: '24',
    ...env,
  });
  const outbound = new HttpChatOutbound(chatUrl, 'bench');
  const app = await startCountersign(config, {
    role: 'all',
    console: false,
    provider: new ScriptedProvider(INSTANT),
    outbounds: [outbound],
    log: createLogger('silent'),
  });
  try {
    let finished = 0;
    const allDone = new Promise<void>((resolve) =>
      app.events.on('finished', () => {
        finished += 1;
        if (finished === turns) resolve();
      }),
    );
    const cpu0 = cpuMs();
    const pg0 = postgresCpuMs();
    const t0 = performance.now();
    // Events arrive the way a platform delivers them to an ingress: concurrently (Socket Mode
    // envelopes and HTTP requests are handled as they come), so several enqueues are in flight.
    let next = 0;
    const ingress = async () => {
      for (let i = next++; i < turns; i = next++) {
        await enqueueWorkItem(app.pool, {
          type: 'CHAT',
          priority: Priority.CRITICAL,
          conversationId: `p4-${i}`,
          requester: { platform: 'bench', userId: 'U1' },
          input: { prompt: `hi ${i}` },
          reply: { platform: 'bench', channel: `p4-${i}` },
        });
      }
    };
    await Promise.all(Array.from({ length: INGRESS_CONCURRENCY }, ingress));
    await allDone;
    const seconds = (performance.now() - t0) / 1000;
    const own = (cpuMs() - cpu0) / turns;
    return {
      turns,
      turnsPerSecond: turns / seconds,
      cpuMsPerTurn: own,
      withPostgresCpuMsPerTurn: own + (postgresCpuMs() - pg0) / turns,
    };
  } finally {
    await app.stop();
  }
}

/**
 * Both bots talk to the same fake chat platform over loopback HTTP (a separate process would be
 * fairer still; in-process it adds the platform's own CPU to both sides equally).
 */
export async function benchP4(connectionString: string, turns = 1000): Promise<P4Result> {
  const chat = await new HttpChatPlatform().start();
  try {
    await directBot(chat.url, 200);
    const direct = await directBot(chat.url, turns);
    const d = await durable(connectionString, chat.url, turns);
    return { durable: d, direct, cpuRatio: d.cpuMsPerTurn / direct.cpuMsPerTurn };
  } finally {
    await chat.stop();
  }
}
