import type { Pool } from '../src/db/pool.ts';
import { FakeDiscord } from '../test/fakes/discord/index.ts';
import { FakeSlack } from '../test/fakes/slack/fake-slack.ts';
import { appMention, blockAction, buttonIn, eventCallback } from '../test/fixtures/slack/events.ts';
import { threadMessage } from '../test/fixtures/discord/payloads.ts';
import { postToApp } from '../test/fakes/slack/http-delivery.ts';
import { summarize, type Summary } from './stats.ts';
import {
  deploy,
  firstAfter,
  hasApprove,
  listening,
  measure,
  parkAll,
  readyClicker,
  SECRET,
  settle,
  slotHeld,
  until,
} from './p9-click-progress.ts';

export interface P10Result {
  /**
   * Event → first visible token of a mention in Slack workspaces B, with no burst and during A's
   * burst; `samples`: the burst's, in the order sent (the first was sent `offsetMs` after the clicks).
   */
  slackB: { quiet: Summary; burst: Summary; samples: number[] };
  /** The same on Discord. */
  discord: { quiet: Summary; burst: Summary; samples: number[] };
  /** The first burst mention was sent this long after the clicks (ms; BENCH_P10_OFFSET_MS). */
  offsetMs: number;
  /** Where each mention's time went, in the order sent (quiet ones first). */
  stages: Stage[];
  /** Click → the ingress's HTTP answer, for A's 50 clicks. */
  acks: Summary;
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
/**
 * Mentions are sent one a second for this long, before the burst and while it runs (A's answers
 * take about 68 s to show, so every one of them is during the burst).
 */
const MENTION_SECONDS = Number(process.env.BENCH_P10_SECONDS ?? 60);
/**
 * The first mention of the burst is sent this long after the clicks: by then the ingress has read
 * and acknowledged them and their decide transactions are in progress (the acks take 40–170 ms on
 * the 2-core VM), which is where a message used to wait for a database connection.
 */
const OFFSET_MS = Number(process.env.BENCH_P10_OFFSET_MS ?? 150);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Mentions {
  /** Sends one mention in a workspace B and one on Discord; returns when the ingress has answered the Slack one. */
  send(): Promise<void>;
  /** Event → first visible token of each mention sent since `from` (index), waiting for all. */
  latencies(from: number): Promise<{ slack: number[]; discord: number[] }>;
  readonly sent: number;
  /** When the ingress answered each Slack mention's delivery: its work item was committed (ms since epoch). */
  readonly answered: number[];
  readonly sentAt: number[];
  /** The channel mention i's reply is in. */
  channel(platform: 'slack' | 'discord', i: number): string;
  /** When mention i's reply first showed anything (the placeholder), ms since epoch. */
  placeholderAt(platform: 'slack' | 'discord', i: number): number | undefined;
}

/**
 * Mentions as people send them, through the ingress process: a signed `app_mention` Events API
 * delivery to its HTTP endpoint (Slack workspaces B, one conversation each) and a `MESSAGE_CREATE`
 * mentioning the bot on the fake gateway (a Discord thread of its own each). The first visible
 * token is the first version of the bot's reply that shows more than the placeholder, stamped by
 * the fake; so the ingress's work (signature, admission, enqueue) is part of every sample.
 */
function mentions(url: string, slack: FakeSlack, discord: FakeDiscord): Mentions {
  const sentAt: number[] = [];
  const answered: number[] = [];
  const threads: string[] = [];
  const slackChannel = (i: number) => `CB${String(i).padStart(8, '0')}`;
  const thread = '1700000001.000100';
  const slackMention = async (i: number) => {
    const team = WORKSPACES_B[i % WORKSPACES_B.length]!;
    const event = appMention({ user: USER, channel: slackChannel(i), text: 'status please', thread_ts: thread, team });
    const res = await postToApp(url, { json: eventCallback(team, event) }, { signingSecret: SECRET });
    // The ingress answers an event once its work item is committed.
    if (res.status !== 200) throw new Error(`P10: a mention was answered ${res.status}`);
    answered[i] = Date.now();
  };
  const shown = (text: string) => text.trim() !== '' && text !== '…';
  return {
    get sent() {
      return sentAt.length;
    },
    answered,
    sentAt,
    channel: (platform, i) => (platform === 'slack' ? slackChannel(i) : threads[i]!),
    placeholderAt: (platform, i) =>
      firstAfter(
        platform === 'slack'
          ? slack.messages.filter((m) => m.channel === slackChannel(i) && m.bot_id).map((m) => m.history)
          : discord
              .messagesIn(threads[i]!)
              .filter((m) => m.source === 'rest')
              .map((m) => m.history),
        sentAt[i]!,
      ),
    async send() {
      const i = sentAt.length;
      threads.push(discord.createThread({ name: `p10-${i}` }).id as string);
      sentAt.push(Date.now());
      discord.userSays(threadMessage(discord.scene, { threadId: threads[i]!, text: 'status please' }));
      await slackMention(i);
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

/** Where one mention's time went, in ms after it was sent. */
interface Stage {
  i: number;
  platform: 'slack' | 'discord';
  /** Slack: the ingress answered the delivery, its work item committed (the gateway has no answer to time). */
  answered?: number;
  /** The worker started the turn. */
  started: number;
  /** The reply's placeholder was visible (the worker posts it as the turn starts). */
  placeholder: number;
  /** The first token was visible. */
  token: number;
}

async function stagesOf(pool: Pool, m: Mentions, tokens: { slack: number[]; discord: number[] }): Promise<Stage[]> {
  const { rows } = await pool.query<{ channel: string; started: number }>(
    `SELECT item->'reply'->>'channel' AS channel, EXTRACT(EPOCH FROM started_at)::float8 * 1000 AS started
       FROM countersign.work_items`,
  );
  const startedIn = new Map(rows.map((r) => [r.channel, Number(r.started)]));
  return (['slack', 'discord'] as const).flatMap((platform) =>
    m.sentAt.map((at, i) => ({
      i,
      platform,
      ...(platform === 'slack' ? { answered: m.answered[i]! - at } : {}),
      started: startedIn.get(m.channel(platform, i))! - at,
      placeholder: m.placeholderAt(platform, i)! - at,
      token: tokens[platform][i]!,
    })),
  );
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

    const m = mentions(url, slack, discord);
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
    // The clicker process is started and has signed the clicks before they are sent, so the first
    // mention of the burst lands while the ingress takes the clicks in, not while a process starts.
    const clicker = await readyClicker(url, clicks, 15_000);
    const [{ clickedAt, acks }] = await Promise.all([
      clicker.go(),
      sleep(OFFSET_MS).then(() => mentionEverySecond(m, MENTION_SECONDS)),
    ]);
    const during = await m.latencies(firstBurstMention);
    const replies = (i: number) =>
      slack.messages.filter((msg) => msg.channel === channel(i) && msg.ts !== cardsPosted[i]!.ts && msg.bot_id);
    const measured = await measure(cards, clickedAt, {
      card: (i) => cardsPosted[i]!.history,
      replies: (i) => replies(i).map((msg) => msg.history),
      text: (v) => (v as { text: string }).text,
      blocks: (v) => (v as { blocks?: unknown }).blocks,
    });
    const stages = await stagesOf(app.pool, m, {
      slack: [...quiet.slack, ...during.slack],
      discord: [...quiet.discord, ...during.discord],
    });
    return {
      // The samples in the order sent, so a p99 of up to 100 samples (their maximum) can be told
      // apart from a slow second: the first mention of the burst shares its second with the clicks.
      slackB: { quiet: summarize(quiet.slack), burst: summarize(during.slack), samples: during.slack },
      discord: { quiet: summarize(quiet.discord), burst: summarize(during.discord), samples: during.discord },
      offsetMs: m.sentAt[firstBurstMention]! - clickedAt,
      stages,
      acks: summarize(acks),
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
