import type { Pool } from '../src/db/pool.ts';
import { enqueueWorkItem } from '../src/queue/turn-lifecycle.ts';
import { Priority } from '../src/core/work-item.ts';
import { FakeDiscord } from '../test/fakes/discord/index.ts';
import { FakeSlack } from '../test/fakes/slack/fake-slack.ts';
import { blockAction, buttonIn } from '../test/fixtures/slack/events.ts';
import { summarize, type Summary } from './stats.ts';
import {
  clickAll,
  deploy,
  firstAfter,
  hasApprove,
  listening,
  measure,
  parkAll,
  SECRET,
  settle,
  slotHeld,
  until,
} from './p9-click-progress.ts';

export interface P10Result {
  /** Event → first visible token of a mention in Slack workspaces B, with no burst and during A's burst. */
  slackB: { quiet: Summary; burst: Summary; samples: number[] };
  /** The same on Discord. */
  discord: { quiet: Summary; burst: Summary; samples: number[] };
  /** Workspace A's burst, as P9 measures it, in this run. */
  burst: { cards: number; answer: Summary; lastAnswer: number; slotHeld: Summary; updatesPerMinute: number };
  concurrency: number;
}

const WORKSPACE_A_UPDATES = 45;
/**
 * The mentions' Slack workspaces, taken in turn: one mention a second is 60 answers a minute, more
 * than one workspace's chat.update budget (45/min) can show, so in a single workspace the mentions
 * would measure their own budget, not the burst's effect on them. Four share the load (15/min each).
 */
const WORKSPACES_B = ['T0P10WSB01', 'T0P10WSB02', 'T0P10WSB03', 'T0P10WSB04'];
const USER = 'U0P10USER1';
/** Mentions are sent one a second for this long, before the burst and while it runs. */
const MENTION_SECONDS = Number(process.env.BENCH_P10_SECONDS ?? 15);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Mentions {
  /** Sends one mention in workspace B and one on Discord; returns when both are enqueued. */
  send(): Promise<void>;
  /** Event → first visible token of each mention sent since `from` (index), waiting for all. */
  latencies(from: number): Promise<{ slack: number[]; discord: number[] }>;
  readonly sent: number;
}

/**
 * Mentions as an ingress enqueues them (work items with a "…" placeholder), one conversation each,
 * in Slack workspace B and in a Discord thread of their own. The first visible token is the first
 * version of the bot's reply that shows more than the placeholder, stamped by the fake.
 */
function mentions(pool: Pool, slack: FakeSlack, discord: FakeDiscord): Mentions {
  const sentAt: number[] = [];
  const threads: string[] = [];
  const slackChannel = (i: number) => `CB${String(i).padStart(8, '0')}`;
  const thread = '1700000001.000100';
  const enqueue = (i: number, platform: 'slack' | 'discord', reply: Record<string, string>) =>
    enqueueWorkItem(pool, {
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: `p10-${platform}-${i}`,
      requester: { platform, userId: platform === 'slack' ? USER : (discord.scene.human.id as string) },
      input: { prompt: 'status please' },
      reply: { platform, ...reply } as never,
      placeholder: '…',
    });
  const shown = (text: string) => text.trim() !== '' && text !== '…';
  return {
    get sent() {
      return sentAt.length;
    },
    async send() {
      const i = sentAt.length;
      threads.push(discord.createThread({ name: `p10-${i}` }).id as string);
      sentAt.push(Date.now());
      await Promise.all([
        enqueue(i, 'slack', {
          channel: slackChannel(i),
          thread,
          workspace: WORKSPACES_B[i % WORKSPACES_B.length]!,
          recipient: USER,
        }),
        enqueue(i, 'discord', { channel: threads[i]! }),
      ]);
    },
    async latencies(from) {
      const slackTimes: number[] = [];
      const discordTimes: number[] = [];
      for (let i = from; i < sentAt.length; i++) {
        const at = sentAt[i]!;
        const s = await until(
          () =>
            firstAfter(
              slack.messages.filter((m) => m.channel === slackChannel(i) && m.bot_id).map((m) => m.history),
              at,
              (v: { text: string }) => shown(v.text),
            ),
          `the first token of Slack mention ${i}`,
        );
        slackTimes.push(s - at);
        const d = await until(
          () =>
            firstAfter(
              discord
                .messagesIn(threads[i]!)
                .filter((m) => m.source === 'rest')
                .map((m) => m.history),
              at,
              (v: { content: string }) => shown(v.content),
            ),
          `the first token of Discord mention ${i}`,
        );
        discordTimes.push(d - at);
      }
      return { slack: slackTimes, discord: discordTimes };
    },
  };
}

async function mentionEverySecond(m: Mentions, seconds: number): Promise<void> {
  const start = Date.now();
  for (let i = 0; i < seconds; i++) {
    await m.send();
    await sleep(Math.max(0, start + (i + 1) * 1000 - Date.now()));
  }
}

/**
 * P10: isolation. 50 parked cards in Slack workspace A (P9's burst) and a mention a second in Slack
 * workspace B and on Discord, against one ingress and one worker process at the default slots. The
 * mentions' event → first visible token is measured first with no burst, then while all 50 cards
 * are clicked at once, in the same run. Workspace A's answers wait for A's chat.update budget;
 * B's and Discord's should not wait for them.
 */
export async function benchP10(connectionString: string, cards = 50): Promise<P10Result> {
  // The fake counts chat.update per token's team, and B's replies go out under the same token as
  // A's; it is given room for both, so only Countersign's own per-workspace budgets bind.
  const slack = await FakeSlack.start({ perMinute: { 'chat.update': 400 } });
  const discord = await FakeDiscord.start();
  const app = await deploy(connectionString, {
    SLACK_BOT_TOKEN: slack.botToken,
    SLACK_API_URL: slack.apiUrl,
    SLACK_MODE: 'http',
    SLACK_SIGNING_SECRET: SECRET,
    SLACK_STREAMING: 'off',
    SLACK_UPDATES_PER_MINUTE: String(WORKSPACE_A_UPDATES),
    DISCORD_TOKEN: discord.token,
    DISCORD_APPLICATION_ID: discord.scene.applicationId,
    DISCORD_GUILD_ID: discord.scene.guildId,
    DISCORD_API_URL: discord.restUrl,
  });
  try {
    await until(() => (discord.gateway.sessions.length > 0 ? true : undefined), 'the gateway session', 120_000);
    const channel = (i: number) => `C${String(i).padStart(8, '0')}`;
    const thread = '1700000000.000100';
    await parkAll(
      app.pool,
      cards,
      'slack',
      (i) => ({ channel: channel(i), thread, workspace: slack.team, recipient: USER }),
      { platform: 'slack', userId: USER, workspace: slack.team },
    );
    const cardsPosted = await until(() => {
      const found = Array.from({ length: cards }, (_, i) =>
        slack.messages.find((m) => m.channel === channel(i) && hasApprove(m.blocks)),
      );
      return found.every(Boolean) ? found.map((m) => m!) : undefined;
    }, 'the cards');
    const capacity = Math.floor(WORKSPACE_A_UPDATES / 10);
    await settle(app.pool, () => Math.max(0, ...slack.messages.map((m) => m.history.at(-1)?.at ?? 0)), [
      { prefix: 'slack:', capacity, refillPerSecond: (WORKSPACE_A_UPDATES - capacity) / 60 },
    ]);
    const url = `http://127.0.0.1:${app.httpPort}/slack/events`;
    await listening(`http://127.0.0.1:${app.httpPort}/healthz`);

    const m = mentions(app.pool, slack, discord);
    await mentionEverySecond(m, MENTION_SECONDS);
    const quiet = await m.latencies(0);
    const firstBurstMention = m.sent;

    const clicks = cardsPosted.map((card, i) => {
      const approve = buttonIn(card.blocks, 'Approve');
      return blockAction(slack.team, {
        user: USER,
        channel: channel(i),
        messageTs: card.ts,
        threadTs: thread,
        value: approve.value,
        actionId: approve.action_id,
        responseUrl: slack.actionResponseUrl(channel(i), card.ts),
      });
    });
    const [{ clickedAt }] = await Promise.all([clickAll(url, clicks, 15_000), mentionEverySecond(m, MENTION_SECONDS)]);
    const during = await m.latencies(firstBurstMention);
    const replies = (i: number) =>
      slack.messages.filter((msg) => msg.channel === channel(i) && msg.ts !== cardsPosted[i]!.ts && msg.bot_id);
    const measured = await measure(cards, clickedAt, {
      card: (i) => cardsPosted[i]!.history,
      replies: (i) => replies(i).map((msg) => msg.history),
      text: (v) => (v as { text: string }).text,
      blocks: (v) => (v as { blocks?: unknown }).blocks,
    });
    return {
      // The samples in the order sent, so a p99 of 15 samples (their maximum) can be told apart from
      // a slow second: the first mention of the burst shares its second with the 50 clicks' ingress.
      slackB: { quiet: summarize(quiet.slack), burst: summarize(during.slack), samples: during.slack },
      discord: { quiet: summarize(quiet.discord), burst: summarize(during.discord), samples: during.discord },
      burst: {
        cards,
        answer: measured.answer,
        lastAnswer: measured.lastAnswer,
        slotHeld: await slotHeld(app.pool, clickedAt),
        updatesPerMinute: WORKSPACE_A_UPDATES,
      },
      concurrency: Number(process.env.BENCH_P9_CONCURRENCY ?? 8),
    };
  } finally {
    await app.stop();
    await slack.close();
    await discord.close();
  }
}
