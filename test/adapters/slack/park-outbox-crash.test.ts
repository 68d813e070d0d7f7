import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../../../src/agent/providers/scripted.ts';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { appMention, blockAction, buttonIn, eventCallback } from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { runCli, type CliProcess } from '../../helpers/processes.ts';

const CHANNEL = 'C0PARKOB01';
const ALICE = 'U0ALICE001';
const SECRET = 'park-outbox-crash-signing-secret';
const PARK_TEXT = 'Before I deploy, I need to know where.';

const script: Script = {
  rules: [
    {
      rounds: [
        {
          text: PARK_TEXT,
          chunkSize: 8,
          delayMs: 10,
          toolCalls: [{ name: 'request_human_approval', args: { question: 'Which region?', options: ['eu', 'us'] } }],
        },
        { text: 'Going with: {{lastToolResult}}' },
      ],
    },
  ],
};

/**
 * A worker process killed after it parked a turn and before the park text was shown (it waits in
 * the outbox for the workspace's spent chat.update budget), and the card answered meanwhile: the
 * continuation, on another worker, takes the orphaned park text over, shows it, and only then shows
 * its own answer, once, below the card.
 */
describe('a worker killed between parking a turn and showing its text', () => {
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
    // This process only takes the mention and the click in; the turns run in real worker processes.
    h = await startHarness({ role: 'ingress', env: slackEnv });
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-park-outbox-crash-'));
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
  const url = () => `http://127.0.0.1:${h.app.http.port}/slack/events`;

  it('shows the park text, then the continuation answer, each once', async () => {
    const first = await startWorker(1);
    // The workspace's chat.update budget is spent for the next hour and a half.
    const bucket = `slack:${fake.team}:chat.update`;
    await h.app.pool.query(
      `INSERT INTO countersign.rate_buckets (key, tokens, updated_at) VALUES ($1, -100, clock_timestamp())`,
      [bucket],
    );
    const m = appMention({ user: ALICE, channel: CHANNEL, text: `<@${fake.botUserId}> deploy the api` });
    const attempts = await fake.postWithRetries(
      url(),
      { json: eventCallback(fake.team, m) },
      { signingSecret: SECRET, delaysMs: [] },
    );
    expect(attempts.at(-1)?.status).toBe(200);

    // Parked; the park text waits in the outbox, locked to the first worker; the card is posted.
    await waitFor(
      async () => {
        const rows = await query<{ locked_by: string; status: string }>(
          `SELECT o.locked_by, w.status FROM countersign.reply_outbox o
             JOIN countersign.work_items w ON w.id = o.work_item_id`,
        );
        return rows.length === 1 && rows[0]?.status === 'awaiting_approval' && rows[0].locked_by ? true : undefined;
      },
      30_000,
      'the park text to wait in the outbox',
    );
    const card = await waitFor(
      async () => fake.botMessages(CHANNEL, m.ts).find((b) => JSON.stringify(b.blocks ?? []).includes('Which region?')),
      30_000,
      'the card',
    );
    expect(fake.botMessages(CHANNEL, m.ts).map((b) => b.text)[0]).toBe('…');

    await startWorker(2);
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    await h.app.pool.query(`UPDATE countersign.rate_buckets SET tokens = 5 WHERE key = $1`, [bucket]);

    const button = buttonIn(card.blocks, 'eu');
    const clicked = await fake.postWithRetries(
      url(),
      {
        interaction: blockAction(fake.team, {
          user: ALICE,
          channel: CHANNEL,
          messageTs: card.ts,
          threadTs: m.ts,
          value: button.value,
          actionId: button.action_id,
        }),
      },
      { signingSecret: SECRET, delaysMs: [] },
    );
    expect(clicked.at(-1)?.status).toBe(200);

    await waitFor(
      async () => (fake.textIn(CHANNEL, m.ts).some((t) => t.startsWith('Going with:')) ? true : undefined),
      45_000,
      'the continuation answer in the thread',
    ).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; thread: ${JSON.stringify(fake.textIn(CHANNEL, m.ts))}`);
    });
    await waitFor(
      async () =>
        Number((await query<{ n: number }>('SELECT count(*)::int AS n FROM countersign.reply_outbox'))[0]?.n) === 0
          ? true
          : undefined,
      10_000,
      'the outbox to empty',
    );
    // The placeholder shows the park text, the card sits below it, the answer below that: each once.
    const thread = fake.botMessages(CHANNEL, m.ts);
    expect(thread).toHaveLength(3);
    expect(thread[0]?.text).toBe(PARK_TEXT);
    expect(thread[1]?.ts).toBe(card.ts);
    expect(thread[2]?.text).toBe('Going with: The person answered: eu');
    // Nothing of the park text landed after the continuation first showed something.
    const parkShown = thread[0]!.history.at(-1)!;
    expect(parkShown.text).toBe(PARK_TEXT);
    expect(parkShown.at).toBeLessThanOrEqual(thread[2]!.history[0]!.at);
  }, 120_000);
});
