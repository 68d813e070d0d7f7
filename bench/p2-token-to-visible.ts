import { startCountersign } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { enqueueWorkItem } from '../src/queue/turn-lifecycle.ts';
import { Priority } from '../src/core/work-item.ts';
import { FakeDiscord } from '../test/fakes/discord/index.ts';
import { startFakeAnthropic } from '../test/fakes/anthropic-server.ts';
import { summarize, type Summary } from './stats.ts';

export interface P2Result {
  latency: Summary;
  editIntervalMs: number;
}

/**
 * A token written by the fake Anthropic server → the first version of the Discord message (in the
 * fake Discord) that shows it. The real Anthropic SDK, the worker and the Discord REST outbound sit
 * in between; the reply is edited at most once a second (Discord's per-channel edit budget).
 */
export async function benchP2(connectionString: string, turns = 3, tokens = 40): Promise<P2Result> {
  const model = await startFakeAnthropic();
  const discord = await FakeDiscord.start();
  const config = loadConfig({
    DATABASE_URL: connectionString,
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    AI_PROVIDER: 'anthropic',
    ANTHROPIC_API_KEY: 'sk-ant-bench',
    ANTHROPIC_BASE_URL: model.url,
    DISCORD_TOKEN: discord.token,
    DISCORD_APPLICATION_ID: discord.scene.applicationId,
    DISCORD_API_URL: discord.restUrl,
  });
  // Worker role: the Discord outbound (REST) without a gateway connection.
  const app = await startCountersign(config, { role: 'worker', console: false, log: createLogger('silent') });
  const latencies: number[] = [];
  try {
    for (let turn = 0; turn < turns; turn++) {
      const words = Array.from({ length: tokens }, (_, i) => `w${turn}x${i} `);
      model.queue.push({ kind: 'stream', text: words, delayMs: 120 });
      const from = model.emitted.length;
      const done = new Promise<void>((resolve) => app.events.once('finished', () => resolve()));
      const channel = discord.scene.dmChannelId;
      await enqueueWorkItem(app.pool, {
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: `p2-${turn}-${Date.now()}`,
        requester: { platform: 'discord', userId: discord.scene.human.id },
        input: { prompt: 'stream please' },
        reply: { platform: 'discord', channel },
      });
      await done;
      const versions = discord.messagesIn(channel).flatMap((m) => m.history);
      for (const word of words) {
        const sent = model.emitted.slice(from).find((e) => e.event.includes(`"text":"${word}"`));
        const seen = versions
          .filter((v) => v.content.includes(word.trim()))
          .map((v) => v.at)
          .sort((a, b) => a - b)[0];
        if (sent && seen !== undefined) latencies.push(seen - sent.at);
      }
    }
  } finally {
    await app.stop();
    await discord.close();
    await model.close();
  }
  return { latency: summarize(latencies), editIntervalMs: 1000 };
}
