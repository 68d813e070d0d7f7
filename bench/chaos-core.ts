import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded.ts';
import { loadConfig } from '../src/config.ts';
import { startCountersign, type Countersign } from '../src/app.ts';
import { createLogger } from '../src/log.ts';
import { Priority } from '../src/core/work-item.ts';
import { enqueueWorkItem } from '../src/queue/turn-lifecycle.ts';
import { HttpChatOutbound, HttpChatPlatform } from '../test/fakes/chat/http-chat-platform.ts';
import { FakeSlack } from '../test/fakes/slack/fake-slack.ts';
import { chaosTools } from './chaos-tools.ts';
import {
  SLACK_SIGNING_SECRET,
  SlackIngressOutage,
  type IngressFigures,
  type IngressOutageOptions,
} from './chaos-ingress.ts';

export interface ChaosOptions {
  turns: number;
  workers: number;
  /** SIGKILLs spread over the run. */
  kills: number;
  restartPostgres: boolean;
  /** Turns arrive evenly over this long; kills land within it (and a little after). */
  arrivalMs: number;
  /** Share of approval cards that are approved (the rest denied). */
  approveRatio: number;
  timeoutMs: number;
  /**
   * The ingress outage: a Slack ingress loses Postgres while events arrive (chaos-ingress.ts). It
   * starts once Postgres has restarted (or at once without a restart), during the kills.
   */
  ingress: IngressOutageOptions;
  progress?: (line: string) => void;
}

export interface ChaosFigures {
  turns: number;
  finished: number;
  approved: number;
  denied: number;
  effectsRunOnce: number;
  effectsRunTwice: number;
  effectsUnapproved: number;
  outcomeUnknown: number;
  completeMessages: number;
  incompleteMessages: string[];
  kills: number;
  postgresRestarts: number;
  seconds: number;
  /** Work items that ended failed or cancelled, with their errors. */
  failures: Array<{ conversation: string; status: string; error: string | null }>;
  ingress: IngressFigures;
}

const WORKER = path.resolve(import.meta.dirname, 'chaos-worker.ts');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * 100 turns (by default) with tool calls and approvals while worker processes are SIGKILLed at random
 * moments and Postgres is restarted once. Every turn must finish, no tool call may run twice, no
 * unapproved call may run, and every final message must be complete. Meanwhile a Slack ingress
 * process loses its database while Slack events arrive: every event must become exactly one turn.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosFigures> {
  const log = options.progress ?? (() => undefined);
  // The system's temporary directory: a run (and the reduced test) writes nothing into the checkout.
  const dir = mkdtempSync(path.join(tmpdir(), 'countersign-chaos-'));
  chmodSync(dir, 0o755);
  const pgOptions = { dir: path.join(dir, 'pg'), port: await freePort(), database: 'countersign' };
  let pg: EmbeddedDatabase = await startEmbeddedPostgres(pgOptions);
  const chat = await new HttpChatPlatform().start();
  const slack = await FakeSlack.start({ pingIntervalMs: 0 });
  const effectsFile = path.join(dir, 'effects.log');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    DATABASE_URL: pg.url,
    AI_PROVIDER: 'scripted',
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'silent',
    WORKER_HEARTBEAT_SECONDS: '1',
    WORKER_DEAD_AFTER_SECONDS: '4',
    WORKER_POLL_INTERVAL_MS: '300',
    WORKER_CONCURRENCY: '8',
    CHAOS_EFFECTS_FILE: effectsFile,
    CHAOS_CHAT_URL: chat.url,
    // Workers answer the ingress outage's Slack mentions too (they listen to nothing: role worker).
    SLACK_BOT_TOKEN: slack.botToken,
    SLACK_API_URL: slack.apiUrl,
    SLACK_MODE: 'http',
    SLACK_SIGNING_SECRET,
    SLACK_STREAMING: 'off',
    // The fake enforces no budget; Slack's 45/min would make the outage's answers take minutes.
    SLACK_UPDATES_PER_MINUTE: '600',
  };
  const workers = new Set<ChildProcess>();
  let stopping = false;
  // Like a process supervisor: a worker that exits on its own (not one we killed) is started again.
  const spawnWorker = () => {
    const child = spawn(process.execPath, [WORKER], {
      env,
      stdio: ['ignore', 'ignore', process.env.CHAOS_LOG_LEVEL ? 'inherit' : 'ignore'],
    });
    workers.add(child);
    child.on('exit', (_code, signal) => {
      workers.delete(child);
      if (!stopping && signal !== 'SIGKILL') spawnWorker();
    });
  };
  let app: Countersign | undefined;
  let ingress: SlackIngressOutage | undefined;
  const started = performance.now();
  let kills = 0;
  let restarts = 0;
  const decided = new Map<string, boolean>();
  try {
    // The ingress side: enqueues turns and takes the approval clicks, as Slack or Discord would.
    app = await startCountersign(
      loadConfig({ DATABASE_URL: pg.url, HTTP_PORT: '0', HTTP_HOST: '127.0.0.1', AI_PROVIDER: 'scripted' }),
      {
        role: 'ingress',
        console: false,
        tools: chaosTools(effectsFile),
        outbounds: [new HttpChatOutbound(chat.url)],
        log: createLogger('silent'),
      },
    );
    ingress = await SlackIngressOutage.start({
      databaseUrl: pg.url,
      fake: slack,
      env: { PATH: env.PATH!, HOME: env.HOME!, AI_PROVIDER: 'scripted' },
      forwardLogs: Boolean(process.env.CHAOS_LOG_LEVEL),
    });
    for (let i = 0; i < options.workers; i++) spawnWorker();
    let outage: { done: boolean; error?: unknown } | undefined;
    const items: unknown[] = [];
    const enqueueNext = async () => {
      const i = items.length;
      items.push(
        await enqueueWorkItem(app!.pool, {
          type: 'CHAT',
          priority: Priority.CRITICAL,
          conversationId: `chaos-${i}`,
          requester: { platform: 'chat', userId: 'U1' },
          input: { prompt: `task ${i}` },
          payload: {},
          reply: { platform: 'chat', channel: `chaos-${i}` },
        }),
      );
    };
    // Turns arrive over `arrivalMs` and kills land at random in that window and after it, so they
    // hit turns in every phase: streaming, parked, continuing.
    const begin = performance.now();
    const killWindow = options.arrivalMs * 1.2;
    const killTimes = Array.from({ length: options.kills }, () => begin + Math.random() * killWindow).sort(
      (a, b) => a - b,
    );
    const deadline = performance.now() + options.timeoutMs;
    for (;;) {
      const due = Math.min(options.turns, Math.ceil(((performance.now() - begin) / options.arrivalMs) * options.turns));
      while (items.length < due) await enqueueNext().catch(() => undefined);
      const pool = app.pool;
      const pending = await pool
        .query<{ nonce: string; calls: string; conversation_id: string }>(
          `SELECT nonce, calls, conversation_id FROM countersign.approval_envelopes
           WHERE status = 'pending' AND card_message_id IS NOT NULL`,
        )
        .catch(() => ({ rows: [] }));
      for (const envelope of pending.rows) {
        const approve = decided.get(envelope.conversation_id) ?? Math.random() < options.approveRatio;
        decided.set(envelope.conversation_id, approve);
        const calls = JSON.parse(envelope.calls) as Array<{ id: string }>;
        await app.approvals
          .submit(
            envelope.nonce,
            calls.map((c) => ({ toolCallId: c.id, approved: approve })),
            { platform: 'chat', userId: 'U1' },
          )
          .catch(() => undefined);
      }
      const open = await pool
        .query<{ n: number }>(
          `SELECT count(*)::int AS n FROM countersign.work_items WHERE status IN ('queued', 'running', 'awaiting_approval')`,
        )
        .then((r) => r.rows[0]?.n ?? 1)
        .catch(() => 1);
      const done = await pool
        .query<{ n: number }>(`SELECT count(*)::int AS n FROM countersign.work_items WHERE status = 'done'`)
        .then((r) => r.rows[0]?.n ?? 0)
        .catch(() => 0);
      if (!outage && (!options.restartPostgres || restarts > 0)) {
        log('the Slack ingress loses Postgres while events arrive');
        const state: { done: boolean; error?: unknown } = { done: false };
        outage = state;
        void ingress.run(options.ingress).then(
          () => {
            state.done = true;
            log('Slack is done delivering');
          },
          (error: unknown) => Object.assign(state, { done: true, error }),
        );
      }
      if (outage?.error) throw outage.error;
      if (open === 0 && done > 0 && items.length === options.turns && outage?.done) break;
      if (performance.now() > deadline) {
        const states = await pool.query(
          `SELECT status, count(*)::int AS n, max(error) AS error FROM countersign.work_items GROUP BY status`,
        );
        const envelopes = await pool.query(
          `SELECT status, (card_message_id IS NOT NULL) AS card, count(*)::int AS n FROM countersign.approval_envelopes GROUP BY 1, 2`,
        );
        // What each unfinished item is waiting for: its job (locked by whom, since when, errors) and the workers.
        const stuck = await pool.query(
          `SELECT w.id, w.status, w.attempts, w.started_at, (c.work_item_id IS NOT NULL) AS checkpoint,
                  j.locked_by, j.locked_at, j.run_at, j.attempts AS job_attempts, j.last_error, t.identifier AS task,
                  (SELECT process_id FROM countersign.worker_slots s WHERE s.worker_id = j.locked_by) AS slot_process
             FROM countersign.work_items w
             LEFT JOIN countersign.turn_checkpoints c ON c.work_item_id = w.id
             LEFT JOIN graphile_worker._private_jobs j ON j.payload->>'workItemId' = w.id::text
             LEFT JOIN graphile_worker._private_tasks t ON t.id = j.task_id
            WHERE w.status IN ('queued', 'running', 'awaiting_approval')`,
        );
        const pools = await pool.query(`SELECT * FROM countersign.worker_processes`).catch(() => ({ rows: [] }));
        throw new Error(
          `chaos run did not finish in ${options.timeoutMs} ms (${open} open, Slack ${outage?.done ? 'done' : 'still delivering'}): items ${JSON.stringify(states.rows)}, envelopes ${JSON.stringify(envelopes.rows)}, unfinished ${JSON.stringify(stuck.rows)}, workers ${JSON.stringify(pools.rows)}`,
        );
      }
      if (kills < options.kills && performance.now() >= killTimes[kills]! && workers.size > 0) {
        const victim = [...workers][Math.floor(Math.random() * workers.size)]!;
        victim.kill('SIGKILL');
        kills += 1;
        log(`killed a worker (${kills}/${options.kills})`);
        spawnWorker();
      }
      if (options.restartPostgres && restarts === 0 && decided.size >= options.turns / 3) {
        log('restarting Postgres');
        await pg.stop();
        await sleep(1000);
        pg = await startEmbeddedPostgres(pgOptions);
        restarts += 1;
      }
      await sleep(200);
    }

    // Verdicts, from the effects file and the chat platform, not from Countersign's bookkeeping.
    const effects = existsSync(effectsFile) ? readFileSync(effectsFile, 'utf8').trim().split('\n').filter(Boolean) : [];
    const perConversation = new Map<string, number>();
    for (const c of effects) perConversation.set(c, (perConversation.get(c) ?? 0) + 1);
    const approved = [...decided.values()].filter(Boolean).length;
    let effectsRunOnce = 0;
    let effectsRunTwice = 0;
    let effectsUnapproved = 0;
    for (const [conversation, n] of perConversation) {
      if (!decided.get(conversation)) effectsUnapproved += n;
      else if (n === 1) effectsRunOnce += 1;
      else effectsRunTwice += 1;
    }
    const unknown = await app.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM countersign.tool_executions WHERE result->>'content' LIKE '%outcome is unknown%'`,
    );
    const results = await app.pool.query<{ conversation_id: string; text: string }>(
      `SELECT conversation_id, result->>'text' AS text FROM countersign.work_items
       WHERE status = 'done' AND item->'input'->'approval' IS NOT NULL`,
    );
    const incomplete: string[] = [];
    let complete = 0;
    for (const row of results.rows) {
      const shown = chat.channelText(row.conversation_id);
      if (row.text.endsWith(' END') && shown.includes(row.text)) complete += 1;
      else incomplete.push(row.conversation_id);
    }
    const failures = await app.pool.query<{ conversation: string; status: string; error: string | null }>(
      `SELECT c.id AS conversation, coalesce(string_agg(w.status || CASE WHEN w.item->'input'->'approval' IS NULL THEN '' ELSE '(continuation)' END, ',' ORDER BY w.seq), 'no work items') AS status,
              max(w.error) AS error
       FROM countersign.conversations c LEFT JOIN countersign.work_items w ON w.conversation_id = c.id
       GROUP BY c.id
       HAVING CASE WHEN c.id LIKE 'slack:%'
                   -- The outage's mentions: one plain turn each.
                   THEN count(*) FILTER (WHERE w.status = 'done') <> 1
                   ELSE count(*) FILTER (WHERE w.status = 'done' AND w.item->'input'->'approval' IS NOT NULL) <> 1
              END
           OR count(*) FILTER (WHERE w.status IN ('failed', 'cancelled')) > 0`,
    );
    const ingressFigures = await ingress.figures(app.pool);
    return {
      failures: failures.rows,
      turns: items.length,
      finished: results.rows.length,
      approved,
      denied: decided.size - approved,
      effectsRunOnce,
      effectsRunTwice,
      effectsUnapproved,
      outcomeUnknown: unknown.rows[0]?.n ?? 0,
      completeMessages: complete,
      incompleteMessages: incomplete,
      kills,
      postgresRestarts: restarts,
      seconds: (performance.now() - started) / 1000,
      ingress: ingressFigures,
    };
  } finally {
    stopping = true;
    for (const w of workers) w.kill('SIGKILL');
    await ingress?.stop();
    await app?.stop();
    await chat.stop();
    await slack.close();
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
