import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Pool } from '../src/db/pool.ts';
import { freePort } from '../src/db/embedded.ts';
import type { FakeSlack } from '../test/fakes/slack/fake-slack.ts';
import type { DeliveryAttempt } from '../test/fakes/slack/http-delivery.ts';
import { appMention, eventCallback } from '../test/fixtures/slack/events.ts';
import { TcpProxy } from '../test/helpers/tcp-proxy.ts';
import { INGRESS_PROMPT } from './chaos-tools.ts';

const CLI = path.resolve(import.meta.dirname, '../src/cli.ts');
const REPO = path.resolve(import.meta.dirname, '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The channel the outage's mentions are written in, and who writes them. */
const INGRESS_CHANNEL = 'C0CHAOSIN1';
const PERSON = 'U0CHAOSPPL';
export const SLACK_SIGNING_SECRET = 'chaos-signing-secret';

/** The answer the worker should leave in the thread of mention `i` (see CHAOS_SCRIPT). */
const answerTo = (i: number) => `Taken: ${INGRESS_PROMPT} ${i}`;

export interface IngressOutageOptions {
  /** app_mention events Slack sends. */
  events: number;
  /** They are first sent evenly over this long. */
  arrivalMs: number;
  /** The ingress loses its database this long after the first event… */
  cutAfterMs: number;
  /** …for this long. */
  cutForMs: number;
  /** Slack's waits before its three retries (Slack: ~0 s, 1 min, 5 min; shortened here). */
  retryDelaysMs: number[];
  /** Events already acknowledged that Slack sends once more (a response it did not see). */
  lateRedeliveries: number;
}

export interface IngressFigures {
  /** app_mention events Slack sent. */
  events: number;
  /** Events first sent while the ingress could not reach Postgres. */
  sentDuringCut: number;
  /** HTTP deliveries, retries and late redeliveries included. */
  deliveries: number;
  /** Deliveries answered non-2xx or not at all (Slack retries those). */
  refused: number;
  /** Events one of whose deliveries was answered 2xx. */
  acknowledged: number;
  /** Retries the ingress found already taken (their first delivery had committed) and acked. */
  retriesFoundTaken: number;
  /** Late redeliveries of acknowledged events, and how many of them were answered 2xx. */
  lateRedeliveries: number;
  lateAcknowledged: number;
  /** Work items (turns) made for the events: exactly one each is the target. */
  workItems: number;
  /** Events with no work item. */
  lost: number;
  /** Work items beyond one per event. */
  duplicated: number;
  /** Threads whose one reply is the answer. */
  answered: number;
  /** Answers posted more than once in a thread. */
  duplicateAnswers: number;
  /** Threads that were not exactly one answer (and placeholders): what they held, for a failure's message. */
  unanswered: Array<{ event: number; replies: string[] }>;
  /** "…" placeholders left behind by a worker killed between posting one and recording it. */
  strayPlaceholders: number;
  /** Times the ingress process exited on its own and was started again. */
  ingressRestarts: number;
  /** How long the ingress's database connection was cut. */
  cutMs: number;
}

interface SentEvent {
  i: number;
  body: ReturnType<typeof eventCallback>;
  ts: string;
  duringCut: boolean;
  attempts: DeliveryAttempt[];
}

/**
 * A production-shaped Slack ingress (`countersign start --role=ingress`, HTTP mode, a child
 * process) whose DATABASE_URL goes through a TCP proxy. `run` cuts the proxy while fake Slack sends
 * app_mention events, retrying as Slack does (X-Slack-Retry-Num), then restores it; `figures`
 * counts what became of every event, from the work items and from what is visible in Slack.
 * Workers are whatever else serves the database (the chaos workers).
 */
export class SlackIngressOutage {
  readonly #fake: FakeSlack;
  readonly #proxy: TcpProxy;
  readonly #env: Record<string, string>;
  readonly #forwardLogs: boolean;
  readonly #sent: SentEvent[] = [];
  #child: ChildProcess | undefined;
  #stopping = false;
  #restarts = 0;
  #retriesFoundTaken = 0;
  #late = { sent: 0, acknowledged: 0 };
  #cutMs = 0;
  url = '';

  private constructor(fake: FakeSlack, proxy: TcpProxy, env: Record<string, string>, forwardLogs: boolean) {
    this.#fake = fake;
    this.#proxy = proxy;
    this.#env = env;
    this.#forwardLogs = forwardLogs;
  }

  /** Starts the proxy and the ingress process, and resolves once it serves Slack's Request URL. */
  static async start(options: {
    databaseUrl: string;
    fake: FakeSlack;
    /** Environment the ingress shares with the rest of the run (PATH, HOME, …). */
    env: Record<string, string>;
    forwardLogs: boolean;
  }): Promise<SlackIngressOutage> {
    const db = new URL(options.databaseUrl);
    const proxy = await TcpProxy.start({ host: db.hostname, port: Number(db.port || 5432) });
    const port = await freePort();
    const outage = new SlackIngressOutage(
      options.fake,
      proxy,
      {
        ...options.env,
        DATABASE_URL: TcpProxy.rewrite(options.databaseUrl, proxy.port),
        HTTP_PORT: String(port),
        HTTP_HOST: '127.0.0.1',
        // debug: the ingress logs each retry it finds already taken, which is counted.
        LOG_LEVEL: 'debug',
        SLACK_BOT_TOKEN: options.fake.botToken,
        SLACK_API_URL: options.fake.apiUrl,
        SLACK_MODE: 'http',
        SLACK_SIGNING_SECRET,
      },
      options.forwardLogs,
    );
    outage.url = `http://127.0.0.1:${port}/slack/events`;
    await outage.#spawn();
    return outage;
  }

  /** Like a process supervisor: an ingress that exits on its own is started again. */
  #spawn(): Promise<void> {
    const child = spawn(process.execPath, [CLI, 'start', '--role=ingress'], {
      env: this.#env,
      cwd: REPO,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.#child = child;
    let buffered = '';
    const tail: string[] = [];
    let resolveReady: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (resolveReady = resolve));
    child.stderr?.on('data', (chunk: Buffer) => {
      if (this.#forwardLogs) process.stderr.write(chunk);
      buffered += chunk.toString('utf8');
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        tail.push(line);
        if (tail.length > 5) tail.shift();
        if (line.includes('"msg":"Countersign is running"')) resolveReady();
        if (line.includes('"msg":"Slack event already taken')) this.#retriesFoundTaken += 1;
      }
    });
    child.on('exit', (code, signal) => {
      resolveReady();
      if (this.#stopping) return;
      this.#restarts += 1;
      process.stderr.write(
        `chaos: the Slack ingress exited (${code ?? signal}); starting it again. Its last lines:\n${tail.join('\n')}\n`,
      );
      // After a pause, as a supervisor would: an ingress that cannot start must not spin.
      setTimeout(() => {
        if (!this.#stopping) void this.#spawn().catch(() => undefined);
      }, 1000);
    });
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the Slack ingress did not start within 120 s')), 120_000);
      void ready.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /**
   * Sends the events over `arrivalMs`, each retried as Slack retries it, while the ingress's database
   * is cut from `cutAfterMs` for `cutForMs`; then sends `lateRedeliveries` acknowledged events again.
   * Resolves when Slack is done with every delivery.
   */
  async run(options: IngressOutageOptions): Promise<void> {
    const begin = performance.now();
    const at = (ms: number) => sleep(Math.max(0, begin + ms - performance.now()));
    const outage = (async () => {
      await at(options.cutAfterMs);
      this.#proxy.cut();
      const cutAt = performance.now();
      await at(options.cutAfterMs + options.cutForMs);
      this.#proxy.restore();
      this.#cutMs = performance.now() - cutAt;
    })();
    const deliveries: Array<Promise<void>> = [];
    for (let i = 0; i < options.events; i++) {
      await at((i * options.arrivalMs) / options.events);
      const mention = appMention({ user: PERSON, channel: INGRESS_CHANNEL, text: `${INGRESS_PROMPT} ${i}` });
      const sent: SentEvent = {
        i,
        body: eventCallback(this.#fake.team, mention),
        ts: mention.ts,
        duringCut: this.#proxy.isCut,
        attempts: [],
      };
      this.#sent.push(sent);
      deliveries.push(
        this.#fake
          .postWithRetries(
            this.url,
            { json: sent.body },
            { signingSecret: SLACK_SIGNING_SECRET, delaysMs: options.retryDelaysMs, timeoutMs: 3000 },
          )
          .then((attempts) => void (sent.attempts = attempts)),
      );
    }
    await Promise.all([outage, ...deliveries]);
    // Slack sends an event again when it did not see the answer (a timeout, a dropped connection):
    // an acknowledged event, delivered once more, must make no second turn.
    for (const sent of this.#sent.filter((s) => acknowledged(s)).slice(0, options.lateRedeliveries)) {
      const result = await this.#fake.post(
        this.url,
        { json: sent.body },
        { signingSecret: SLACK_SIGNING_SECRET, retryNum: 1, retryReason: 'http_timeout' },
      );
      this.#late.sent += 1;
      if (result.status >= 200 && result.status < 300) this.#late.acknowledged += 1;
    }
  }

  /** The conversations the events' turns belong to (a mention's thread is its own ts). */
  conversations(): string[] {
    return this.#sent.map((s) => conversationOf(this.#fake.team, s.ts));
  }

  /** What became of every event; read once the run's work items have all come to rest. */
  async figures(pool: Pool): Promise<IngressFigures> {
    const { rows } = await pool.query<{ conversation_id: string; n: number }>(
      `SELECT conversation_id, count(*)::int AS n FROM countersign.work_items
        WHERE conversation_id = ANY($1::text[]) GROUP BY conversation_id`,
      [this.conversations()],
    );
    const items = new Map(rows.map((r) => [r.conversation_id, r.n]));
    let lost = 0;
    let duplicated = 0;
    let answered = 0;
    let duplicateAnswers = 0;
    let strayPlaceholders = 0;
    const unanswered: IngressFigures['unanswered'] = [];
    for (const sent of this.#sent) {
      const n = items.get(conversationOf(this.#fake.team, sent.ts)) ?? 0;
      if (n === 0) lost += 1;
      duplicated += Math.max(0, n - 1);
      const replies = this.#fake.botMessages(INGRESS_CHANNEL, sent.ts).map((m) => m.text);
      const answers = replies.filter((t) => t === answerTo(sent.i)).length;
      const placeholders = replies.filter((t) => t === '…').length;
      strayPlaceholders += placeholders;
      duplicateAnswers += Math.max(0, answers - 1);
      if (answers === 1 && replies.length === 1 + placeholders) answered += 1;
      else if (unanswered.length < 5) unanswered.push({ event: sent.i, replies: replies.map((r) => r.slice(0, 120)) });
    }
    const attempts = this.#sent.flatMap((s) => s.attempts);
    return {
      events: this.#sent.length,
      sentDuringCut: this.#sent.filter((s) => s.duringCut).length,
      deliveries: attempts.length + this.#late.sent,
      refused: attempts.filter((a) => !ok(a)).length + (this.#late.sent - this.#late.acknowledged),
      acknowledged: this.#sent.filter((s) => acknowledged(s)).length,
      retriesFoundTaken: this.#retriesFoundTaken,
      lateRedeliveries: this.#late.sent,
      lateAcknowledged: this.#late.acknowledged,
      workItems: [...items.values()].reduce((a, b) => a + b, 0),
      lost,
      duplicated,
      answered,
      duplicateAnswers,
      unanswered,
      strayPlaceholders,
      ingressRestarts: this.#restarts,
      cutMs: this.#cutMs,
    };
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    const child = this.#child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    await this.#proxy.close();
  }
}

const ok = (a: DeliveryAttempt) => a.status !== undefined && a.status >= 200 && a.status < 300;
const acknowledged = (s: SentEvent) => s.attempts.some(ok);
const conversationOf = (team: string, ts: string) => `slack:${team}:${INGRESS_CHANNEL}:${ts}`;
