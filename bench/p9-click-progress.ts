import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { createPool, type Pool } from '../src/db/pool.ts';
import { enqueueWorkItem } from '../src/queue/turn-lifecycle.ts';
import { Priority } from '../src/core/work-item.ts';
import { FakeDiscord } from '../test/fakes/discord/index.ts';
import { FakeSlack } from '../test/fakes/slack/fake-slack.ts';
import { blockAction, buttonIn } from '../test/fixtures/slack/events.ts';
import { buttonInteraction } from '../test/fixtures/discord/payloads.ts';
import { summarize, type Summary } from './stats.ts';
import { DISCORD_BUCKETS, type BucketShape } from '../src/adapters/discord/rate-limits.ts';

export interface P9Platform {
  platform: 'slack' | 'discord';
  cards: number;
  /** Click → the platform has Countersign's answer to the interaction (HTTP 200 / interaction callback). */
  ack: Summary;
  /** Click → the card shows its decided state. */
  decided: Summary;
  /** Click → the first message write the continuation makes in the thread (a post or an edit). */
  firstChange: Summary;
  /** Click → the answer ("Deployed: …") is visible. */
  answer: Summary;
  /** Click → the last of the answers is visible (ms). */
  lastAnswer: number;
  /** How long each continuation held its worker slot: started → settled (ms). */
  slotHeld: Summary;
  /** Countersign's pacing of edits to one reply. */
  editIntervalMs: number;
  /** The worker's WORKER_CONCURRENCY. */
  concurrency: number;
  /** Calls the fake answered 429 from the click on (it enforces the platform's documented limits). */
  rateLimited: number;
  /** Slack only: chat.update per minute per workspace Countersign allows itself. */
  updatesPerMinute?: number;
  seconds: number;
}

const ENTRY = path.join(import.meta.dirname, 'p9-process.ts');
const CLICKER = path.join(import.meta.dirname, 'p9-clicker.ts');
/** Interactive slots of the worker process: Countersign's default unless BENCH_P9_CONCURRENCY says otherwise. */
const CONCURRENCY = Number(process.env.BENCH_P9_CONCURRENCY ?? 8);
export const SECRET = 'p9-signing-secret';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until<T>(probe: () => T | undefined, what: string, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`P9: timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A shared rate bucket's shape, for the keys starting with `prefix`. */
export interface BucketOf extends BucketShape {
  prefix: string;
}

/**
 * The cards had been waiting for a person: by the click, what parking them spent of the platform's
 * budgets has refilled. Waits until the fake has seen no write for `quietMs` (longer than any of the
 * fake's fixed windows), then until each of Countersign's shared buckets is full again.
 */
export async function settle(pool: Pool, lastWriteAt: () => number, buckets: BucketOf[], quietMs = 6000) {
  await until(
    () => (Date.now() - lastWriteAt() > quietMs ? true : undefined),
    'the platform writes to settle',
    600_000,
  );
  for (;;) {
    const { rows } = await pool.query<{ key: string; tokens: number; age: number }>(
      `SELECT key, tokens, EXTRACT(EPOCH FROM clock_timestamp() - updated_at)::float8 AS age
         FROM countersign.rate_buckets`,
    );
    const waits = rows.map((r) => {
      const shape = buckets.find((b) => r.key.startsWith(b.prefix));
      if (!shape) return 0;
      return Math.max(0, ((shape.capacity - Number(r.tokens)) / shape.refillPerSecond - Number(r.age)) * 1000);
    });
    const wait = Math.max(0, ...waits);
    if (wait === 0) return;
    await sleep(Math.ceil(wait) + 50);
  }
}

/** Earliest version stamped at or after `since`, from any of `histories`. */
export function firstAfter(
  histories: Array<Array<{ at: number }>>,
  since: number,
  match: (v: never) => boolean = () => true,
) {
  const times = histories.flatMap((h) => h.filter((v) => v.at >= since && match(v as never)).map((v) => v.at));
  return times.length ? Math.min(...times) : undefined;
}

/** Countersign as deployed: an ingress process answering the clicks and a worker process running turns. */
interface Deployment {
  /** The bench's own connection, for parking turns and reading the rate buckets. */
  pool: Pool;
  httpPort: number;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

export async function deploy(connectionString: string, env: Record<string, string>): Promise<Deployment> {
  const httpPort = await freePort();
  const common = {
    ...process.env,
    DATABASE_URL: connectionString,
    HTTP_HOST: '127.0.0.1',
    WORKER_CONCURRENCY: String(CONCURRENCY),
    STOP_BUTTON_AFTER_MS: '60000',
    LOG_LEVEL: process.env.BENCH_P9_LOG ?? 'silent',
    ...env,
  };
  const spawnRole = (role: 'ingress' | 'worker', port: number) =>
    spawn(process.execPath, [ENTRY], {
      env: { ...common, P9_ROLE: role, HTTP_PORT: String(port) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  const children = [spawnRole('ingress', httpPort), spawnRole('worker', 0)];
  const exited = children.map((c) => new Promise<void>((r) => c.once('exit', () => r())));
  const pool = createPool(connectionString, 4);
  return {
    pool,
    httpPort,
    async stop() {
      for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
      await Promise.race([Promise.all(exited), sleep(15_000)]);
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      await pool.end();
    },
  };
}

/** The clicker process (bench/p9-clicker.ts), its requests signed and waiting for `go`. */
export interface Clicker {
  /** Sends every click at once; resolves with the click time and each click's answer time (ms). */
  go(): Promise<{ clickedAt: number; acks: number[] }>;
}

/** Starts the clicker and waits until it has signed every request. */
export async function readyClicker(url: string, payloads: unknown[], timeoutMs?: number): Promise<Clicker> {
  const child = spawn(process.execPath, [CLICKER], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  let ready: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.startsWith('ready\n')) ready();
  });
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  child.stdin.write(`${JSON.stringify({ url, secret: SECRET, payloads, ...(timeoutMs ? { timeoutMs } : {}) })}\n`);
  const code = await Promise.race([isReady.then(() => undefined), exited]);
  if (code !== undefined) throw new Error(`P9: the clicker exited with ${code} before it was ready`);
  return {
    async go() {
      child.stdin.end('go\n');
      const exit = await exited;
      if (exit !== 0) throw new Error(`P9: the clicker exited with ${exit}`);
      return JSON.parse(out.slice('ready\n'.length)) as { clickedAt: number; acks: number[] };
    },
  };
}

/** Sends the signed clicks from a process of its own (bench/p9-clicker.ts) and reads its timings. */
async function clickAll(
  url: string,
  payloads: unknown[],
  timeoutMs?: number,
): Promise<{ clickedAt: number; acks: number[] }> {
  return (await readyClicker(url, payloads, timeoutMs)).go();
}

/** Waits until the ingress answers over HTTP. */
export async function listening(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await fetch(url).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`P9: nothing answers at ${url}`);
    await sleep(100);
  }
}

/** Enqueues one turn per place, as an ingress would; the caller waits for the cards. Not measured. */
export async function parkAll(
  pool: Pool,
  cards: number,
  platform: 'slack' | 'discord',
  place: (i: number) => { channel: string; thread?: string; workspace?: string; recipient?: string },
  requester: { platform: string; userId: string; workspace?: string },
): Promise<void> {
  for (let i = 0; i < cards; i++) {
    await enqueueWorkItem(pool, {
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: `p9-${platform}-${i}`,
      requester,
      input: { prompt: `deploy ${i}` },
      reply: { platform, ...place(i) },
      placeholder: '…',
    });
  }
}

export const hasApprove = (blocksOrComponents: unknown) =>
  JSON.stringify(blocksOrComponents ?? []).includes('"Approve"');

interface Views {
  /** Every version of card i, oldest first, each stamped by the fake when it stored it. */
  card: (i: number) => Array<{ at: number }>;
  /** The version histories of the bot's other messages in card i's thread. */
  replies: (i: number) => Array<Array<{ at: number }>>;
  text: (version: unknown) => string;
  blocks: (version: unknown) => unknown;
}

/** The figures every platform reports besides its measured times. */
function summary(acks: number[], calls: Array<{ at: number; status: number }>, clickedAt: number, started: number) {
  return {
    cards: acks.length,
    ack: summarize(acks),
    rateLimited: calls.filter((c) => c.at >= clickedAt && c.status === 429).length,
    concurrency: CONCURRENCY,
    editIntervalMs: 1000,
    seconds: (Date.now() - started) / 1000,
  };
}

/** Waits for every card to show its decision and every continuation to answer; times from the click. */
export async function measure(cards: number, clickedAt: number, views: Views) {
  const decided: number[] = [];
  const firstChange: number[] = [];
  const answer: number[] = [];
  for (let i = 0; i < cards; i++) {
    const shown = await until(
      () => firstAfter([views.card(i)], clickedAt, (v) => !hasApprove(views.blocks(v))),
      `card ${i} to show its decision`,
    );
    decided.push(shown - clickedAt);
    const answered = await until(
      () => firstAfter(views.replies(i), clickedAt, (v) => views.text(v).includes('Deployed')),
      `the answer in thread ${i}`,
    );
    answer.push(answered - clickedAt);
    firstChange.push(firstAfter(views.replies(i), clickedAt)! - clickedAt);
  }
  return {
    decided: summarize(decided),
    firstChange: summarize(firstChange),
    answer: summarize(answer),
    lastAnswer: Math.max(...answer),
  };
}

/**
 * How long each of P9's continuations held its worker slot: from its start to its settling (the
 * job completes in the same breath). Before the outbox (#35) this included the wait for the
 * platform's budget; now it is the computation.
 */
export async function slotHeld(pool: Pool, since: number): Promise<Summary> {
  const { rows } = await pool.query<{ ms: number }>(
    `SELECT EXTRACT(EPOCH FROM finished_at - started_at)::float8 * 1000 AS ms FROM countersign.work_items
      WHERE conversation_id LIKE 'p9-%' AND started_at >= to_timestamp($1::float8 / 1000) AND finished_at IS NOT NULL`,
    [since],
  );
  return summarize(rows.map((r) => Number(r.ms)));
}

/**
 * P9 on Slack (HTTP mode): 50 parked turns in 50 threads of one workspace, their Approve buttons
 * clicked at once as 50 signed block_actions POSTs. Times are taken by the fake: when it sent the
 * click, when Countersign's HTTP answer arrived, and when each message version was stored.
 */
async function slackP9(connectionString: string, cards: number): Promise<P9Platform> {
  // chat.update held to its documented Tier 3 budget, as in P3.
  const fake = await FakeSlack.start({ perMinute: { 'chat.update': 50 } });
  const updatesPerMinute = 45;
  const app = await deploy(connectionString, {
    SLACK_BOT_TOKEN: fake.botToken,
    SLACK_API_URL: fake.apiUrl,
    SLACK_MODE: 'http',
    SLACK_SIGNING_SECRET: SECRET,
    SLACK_STREAMING: 'off',
    SLACK_UPDATES_PER_MINUTE: String(updatesPerMinute),
  });
  const started = Date.now();
  try {
    const user = 'U0P9USER01';
    const channel = (i: number) => `C${String(i).padStart(8, '0')}`;
    const thread = '1700000000.000100';
    await parkAll(
      app.pool,
      cards,
      'slack',
      (i) => ({ channel: channel(i), thread, workspace: fake.team, recipient: user }),
      {
        platform: 'slack',
        userId: user,
        workspace: fake.team,
      },
    );
    const cardsPosted = await until(() => {
      const found = Array.from({ length: cards }, (_, i) =>
        fake.messages.find((m) => m.channel === channel(i) && hasApprove(m.blocks)),
      );
      return found.every(Boolean) ? found.map((m) => m!) : undefined;
    }, 'the cards');
    const lastWriteAt = () => Math.max(0, ...fake.messages.map((m) => m.history.at(-1)?.at ?? 0));
    // SlackOutbound's workspace budget for chat.update at SLACK_UPDATES_PER_MINUTE.
    const capacity = Math.floor(updatesPerMinute / 10);
    await settle(app.pool, lastWriteAt, [
      { prefix: 'slack:', capacity, refillPerSecond: (updatesPerMinute - capacity) / 60 },
    ]);
    const url = `http://127.0.0.1:${app.httpPort}/slack/events`;
    await listening(`http://127.0.0.1:${app.httpPort}/healthz`);
    const clicks = cardsPosted.map((card, i) => {
      const approve = buttonIn(card.blocks, 'Approve');
      return blockAction(fake.team, {
        user,
        channel: channel(i),
        messageTs: card.ts,
        threadTs: thread,
        value: approve.value,
        actionId: approve.action_id,
        responseUrl: fake.actionResponseUrl(channel(i), card.ts),
      });
    });
    const { clickedAt, acks } = await clickAll(url, clicks);
    // The bot's other messages in card i's thread: the parked reply, and whatever the continuation posts.
    const replies = (i: number) =>
      fake.messages.filter((m) => m.channel === channel(i) && m.ts !== cardsPosted[i]!.ts && m.bot_id);
    const measured = await measure(cards, clickedAt, {
      card: (i) => cardsPosted[i]!.history,
      replies: (i) => replies(i).map((m) => m.history),
      text: (v) => (v as { text: string }).text,
      blocks: (v) => (v as { blocks?: unknown }).blocks,
    });
    return {
      platform: 'slack',
      ...measured,
      slotHeld: await slotHeld(app.pool, clickedAt),
      ...summary(acks, fake.rateLimits.calls, clickedAt, started),
      updatesPerMinute,
    };
  } finally {
    await app.stop();
    await fake.close();
  }
}

/**
 * P9 on Discord: 50 parked turns in 50 threads of one guild, their Approve buttons clicked at once
 * as 50 INTERACTION_CREATE dispatches over the fake gateway.
 */
async function discordP9(connectionString: string, cards: number): Promise<P9Platform> {
  const fake = await FakeDiscord.start();
  const app = await deploy(connectionString, {
    DISCORD_TOKEN: fake.token,
    DISCORD_APPLICATION_ID: fake.scene.applicationId,
    DISCORD_GUILD_ID: fake.scene.guildId,
    DISCORD_API_URL: fake.restUrl,
  });
  const started = Date.now();
  try {
    await until(() => (fake.gateway.sessions.length > 0 ? true : undefined), 'the gateway session', 30_000);
    const threads = Array.from({ length: cards }, (_, i) => fake.createThread({ name: `p9-${i}` }).id as string);
    await parkAll(app.pool, cards, 'discord', (i) => ({ channel: threads[i]! }), {
      platform: 'discord',
      userId: fake.scene.human.id as string,
    });
    const cardsPosted = await until(() => {
      const found = threads.map((t) => fake.messagesIn(t).find((m) => hasApprove(m.message.components)));
      return found.every(Boolean) ? found.map((m) => m!) : undefined;
    }, 'the cards');
    const lastWriteAt = () =>
      Math.max(0, ...threads.flatMap((t) => fake.messagesIn(t).map((m) => m.history.at(-1)?.at ?? 0)));
    await settle(app.pool, lastWriteAt, [
      { prefix: 'discord:edit:', ...DISCORD_BUCKETS.channelEdit },
      { prefix: 'discord:global:', ...DISCORD_BUCKETS.global },
    ]);
    const clickedAt = Date.now();
    const states = cardsPosted.map((card, i) => {
      const approve = (card.message.components as Array<{ components: Array<{ label: string; custom_id: string }> }>)
        .flatMap((r) => r.components)
        .find((b) => b.label === 'Approve')!;
      return fake.interact(
        buttonInteraction(fake.scene, { customId: approve.custom_id, message: card.message, channelId: threads[i]! }),
      );
    });
    const acks: number[] = [];
    for (const [i, state] of states.entries()) {
      const response = await until(() => state.response, `interaction ${i} answered`);
      acks.push(response.at - state.receivedAt);
    }
    const measured = await measure(cards, clickedAt, {
      card: (i) => fake.message(cardsPosted[i]!.message.id as string)!.history,
      replies: (i) =>
        fake
          .messagesIn(threads[i]!)
          .filter((m) => m.message.id !== cardsPosted[i]!.message.id && m.source === 'rest')
          .map((m) => m.history),
      text: (v) => (v as { content: string }).content,
      blocks: (v) => (v as { components?: unknown }).components,
    });
    return {
      platform: 'discord',
      ...measured,
      slotHeld: await slotHeld(app.pool, clickedAt),
      ...summary(acks, fake.rateLimits.calls, clickedAt, started),
    };
  } finally {
    await app.stop();
    await fake.close();
  }
}

/** P9: 50 pending cards clicked at once, on Slack (HTTP) and on Discord. */
export async function benchP9(freshDatabase: (name: string) => Promise<string>, cards = 50): Promise<P9Platform[]> {
  const platforms = (process.env.BENCH_P9_PLATFORMS ?? 'slack,discord').split(',');
  const results: P9Platform[] = [];
  if (platforms.includes('slack')) results.push(await slackP9(await freshDatabase('p9slack'), cards));
  if (platforms.includes('discord')) results.push(await discordP9(await freshDatabase('p9discord'), cards));
  return results;
}
