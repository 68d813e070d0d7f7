import { startCountersign } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { ScriptedProvider } from '../src/agent/providers/scripted.ts';
import { enqueueWorkItem } from '../src/queue/turn-lifecycle.ts';
import { Priority } from '../src/core/work-item.ts';
import { FakeDiscord } from '../test/fakes/discord/index.ts';
import { FakeSlack } from '../test/fakes/slack/fake-slack.ts';

export interface P3Result {
  platform: 'slack' | 'discord';
  conversations: number;
  seconds: number;
  /** The busiest 60 seconds of the budgeted method. */
  peakPerMinute: number;
  budgetPerMinute: number;
  rateLimited: number;
  incomplete: number;
}

const SCRIPT = { rules: [{ rounds: [{ text: 'answer for {{lastUser}} — done.', chunkSize: 6, delayMs: 20 }] }] };

function peak(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= 60_000) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

async function run(
  platform: 'slack' | 'discord',
  connectionString: string,
  conversations: number,
  env: Record<string, string>,
  channelOf: (i: number) => string,
  finalTexts: (i: number) => string[],
): Promise<{ seconds: number }> {
  const app = await startCountersign(
    loadConfig({
      DATABASE_URL: connectionString,
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      WORKER_CONCURRENCY: '16',
      ...env,
    }),
    { role: 'worker', console: false, provider: new ScriptedProvider(SCRIPT), log: createLogger('silent') },
  );
  const started = Date.now();
  try {
    let finished = 0;
    const all = new Promise<void>((resolve) =>
      app.events.on('finished', () => {
        finished += 1;
        if (finished === conversations) resolve();
      }),
    );
    for (let i = 0; i < conversations; i++) {
      await enqueueWorkItem(app.pool, {
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: `p3-${platform}-${i}`,
        requester: { platform, userId: 'U1' },
        input: { prompt: `c${i}` },
        reply: {
          platform,
          channel: channelOf(i),
          workspace: 'W1',
          ...(platform === 'slack' ? { thread: '1700000000.000001' } : {}),
        },
      });
    }
    await all;
    void finalTexts;
    return { seconds: (Date.now() - started) / 1000 };
  } finally {
    await app.stop();
  }
}

/**
 * 200 simultaneous conversations in one Slack workspace and in one Discord guild: platform calls in
 * the busiest minute against the budget, 429s seen, and whether every final message is complete.
 */
export async function benchP3(
  freshDatabase: (name: string) => Promise<string>,
  conversations = 200,
): Promise<P3Result[]> {
  const results: P3Result[] = [];
  // Slack's documented tiers: chat.update Tier 3, the streaming starts/stops Tier 2, appends Tier 4.
  const slack = await FakeSlack.start({
    perMinute: { 'chat.update': 50, 'chat.startStream': 20, 'chat.stopStream': 20, 'chat.appendStream': 100 },
  });
  try {
    const budget = 45;
    const { seconds } = await run(
      'slack',
      await freshDatabase('p3slack'),
      conversations,
      {
        SLACK_BOT_TOKEN: slack.botToken,
        SLACK_APP_TOKEN: slack.appToken,
        SLACK_API_URL: slack.apiUrl,
        SLACK_UPDATES_PER_MINUTE: String(budget),
      },
      (i) => `C${String(i).padStart(8, '0')}`,
      () => [],
    );
    const updates = slack.calls.filter((c) => c.method === 'chat.update' && c.status === 200).map((c) => c.at);
    let incomplete = 0;
    for (let i = 0; i < conversations; i++) {
      if (!slack.textIn(`C${String(i).padStart(8, '0')}`).includes(`answer for c${i} — done.`)) incomplete += 1;
    }
    results.push({
      platform: 'slack',
      conversations,
      seconds,
      peakPerMinute: peak(updates),
      budgetPerMinute: budget,
      rateLimited: slack.calls.filter((c) => c.status === 429).length,
      incomplete,
    });
  } finally {
    await slack.close();
  }
  const discord = await FakeDiscord.start();
  try {
    const channels = Array.from(
      { length: conversations },
      (_, i) => discord.createThread({ name: `p3-${i}` }).id as string,
    );
    const { seconds } = await run(
      'discord',
      await freshDatabase('p3discord'),
      conversations,
      {
        DISCORD_TOKEN: discord.token,
        DISCORD_APPLICATION_ID: discord.scene.applicationId,
        DISCORD_API_URL: discord.restUrl,
      },
      (i) => channels[i]!,
      () => [],
    );
    const calls = discord.requests.filter(
      (r) => r.route.startsWith('POST /channels') || r.route.startsWith('PATCH /channels'),
    );
    let incomplete = 0;
    for (let i = 0; i < conversations; i++) {
      if (!discord.botTextIn(channels[i]!).some((t) => t.includes(`answer for c${i} — done.`))) incomplete += 1;
    }
    results.push({
      platform: 'discord',
      conversations,
      seconds,
      peakPerMinute: peak(calls.map((r) => r.at)),
      budgetPerMinute: 50 * 60,
      rateLimited: discord.requests.filter((r) => r.status === 429).length,
      incomplete,
    });
  } finally {
    await discord.close();
  }
  return results;
}
