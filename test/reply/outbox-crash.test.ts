import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { FakeSlack } from '../fakes/slack/fake-slack.ts';
import { appMention, eventCallback } from '../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { runCli, type CliProcess } from '../helpers/processes.ts';

const CHANNEL = 'C0OUTBOX01';
const ALICE = 'U0ALICE001';
const SECRET = 'outbox-crash-signing-secret';
const ANSWER = 'The deploy finished at noon and every check passed.';

const script: Script = { rules: [{ rounds: [{ text: ANSWER, chunkSize: 8, delayMs: 10 }] }] };

/**
 * A worker process killed after its turn computed the answer and before the answer was shown (it
 * waits in the outbox for the workspace's spent chat.update budget): another worker takes the
 * reply over and shows it once, in the message the turn already posted.
 */
describe('a worker killed between computing an answer and delivering it', () => {
  let fake: FakeSlack;
  let h: Harness;
  let env: Record<string, string>;
  const workers: CliProcess[] = [];

  beforeAll(async () => {
    fake = await FakeSlack.start();
    const slackEnv = {
      SLACK_BOT_TOKEN: fake.botToken,
      SLACK_API_URL: fake.apiUrl,
      SLACK_STREAMING: 'off',
      SLACK_MODE: 'http',
      SLACK_SIGNING_SECRET: SECRET,
    };
    // This process only takes the mention in; the turns run in real worker processes.
    h = await startHarness({ role: 'ingress', env: slackEnv });
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-outbox-crash-'));
    writeFileSync(path.join(dir, 'script.json'), JSON.stringify(script));
    env = {
      ...slackEnv,
      DATABASE_URL: h.db.url,
      AI_PROVIDER: 'scripted',
      SCRIPTED_MODEL_SCRIPT: path.join(dir, 'script.json'),
      AGENT_WORKSPACE_ROOT: path.join(dir, 'workspace'),
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      WORKER_HEARTBEAT_SECONDS: '1',
      WORKER_DEAD_AFTER_SECONDS: '3',
      WORKER_POLL_INTERVAL_MS: '200',
    };
  });
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await h.stop();
    await fake.close();
  });

  const query = async <T>(sql: string, values: unknown[] = []) => (await h.app.pool.query(sql, values)).rows as T[];
  const liveWorkers = async () =>
    Number((await query<{ n: number }>('SELECT count(*)::int AS n FROM countersign.worker_processes'))[0]?.n);
  const startWorker = async (expected: number) => {
    const worker = runCli(['start', '--role=worker'], env);
    workers.push(worker);
    await waitFor(async () => ((await liveWorkers()) === expected ? true : undefined), 30_000, 'a worker process');
    return worker;
  };

  it('is shown once by another worker, editing the message the first one posted', async () => {
    const first = await startWorker(1);
    // The workspace's chat.update budget is spent for the next hour and a half.
    const bucket = `slack:${fake.team}:chat.update`;
    await h.app.pool.query(
      `INSERT INTO countersign.rate_buckets (key, tokens, updated_at) VALUES ($1, -100, clock_timestamp())`,
      [bucket],
    );
    const m = appMention({ user: ALICE, channel: CHANNEL, text: `<@${fake.botUserId}> how did the deploy go?` });
    const attempts = await fake.postWithRetries(
      `http://127.0.0.1:${h.app.http.port}/slack/events`,
      { json: eventCallback(fake.team, m) },
      { signingSecret: SECRET, delaysMs: [] },
    );
    expect(attempts.at(-1)?.status).toBe(200);

    // Computed and settled; the answer waits in the outbox, locked to the first worker.
    const [row] = await waitFor(
      async () => {
        const rows = await query<{ locked_by: string; status: string }>(
          `SELECT o.locked_by, w.status FROM countersign.reply_outbox o
             JOIN countersign.work_items w ON w.id = o.work_item_id`,
        );
        return rows.length === 1 && rows[0]?.status === 'done' ? rows : undefined;
      },
      30_000,
      'the answer to wait in the outbox',
    );
    expect(row?.locked_by).toBeTruthy();
    expect(fake.botMessages(CHANNEL, m.ts).map((b) => b.text)).toEqual(['…']);

    await startWorker(2);
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    // The budget refills; the second worker takes the reply over once the first is declared dead.
    await h.app.pool.query(`UPDATE countersign.rate_buckets SET tokens = 5 WHERE key = $1`, [bucket]);

    await waitFor(
      async () => (fake.textIn(CHANNEL, m.ts).includes(ANSWER) ? true : undefined),
      30_000,
      'the answer in the thread',
    );
    await waitFor(
      async () =>
        Number((await query<{ n: number }>('SELECT count(*)::int AS n FROM countersign.reply_outbox'))[0]?.n) === 0
          ? true
          : undefined,
      10_000,
      'the outbox row to go',
    );
    // One message: the placeholder the first worker posted, now showing the answer. Nothing twice.
    expect(fake.botMessages(CHANNEL, m.ts).map((b) => b.text)).toEqual([ANSWER]);
  });
});
