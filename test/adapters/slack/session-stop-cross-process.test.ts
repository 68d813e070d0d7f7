import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../../../src/agent/providers/scripted.ts';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { appMention, eventCallback, eventsApiEnvelope } from '../../fixtures/slack/events.ts';
import { jobsIdle, startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { runCli, type CliProcess } from '../../helpers/processes.ts';

const CHANNEL = 'C0OPS00001';
const ALICE = 'U0ALICE001';

const script: Script = {
  rules: [
    {
      match: 'wait for the batch',
      rounds: [
        { toolCalls: [{ name: 'run_command', args: { command: ['sleep', '30'], timeoutSeconds: 60 } }] },
        { text: 'the batch finished' },
      ],
    },
    { rounds: [{ text: 'hello' }] },
  ],
};

const SECRET = 'session-stop-signing-secret';

/**
 * Slack's native Stop reaches the ingress; the turn runs in another process. The stop must cross
 * over (recorded, NOTIFY), end the running command, and move the session away from processing.
 * Delivered both ways Slack delivers events: over Socket Mode and as a signed HTTP POST.
 */
describe.each(['socket', 'http'] as const)(
  'agent_session_stopped over %s while a tool runs in another worker process',
  (mode) => {
    let fake: FakeSlack;
    let h: Harness;
    let worker: CliProcess | undefined;
    beforeAll(async () => {
      fake = await FakeSlack.start();
      const slackEnv =
        mode === 'socket'
          ? fake.env({ SLACK_STREAMING: 'off' })
          : {
              SLACK_BOT_TOKEN: fake.botToken,
              SLACK_API_URL: fake.apiUrl,
              SLACK_STREAMING: 'off',
              SLACK_MODE: 'http',
              SLACK_SIGNING_SECRET: SECRET,
            };
      h = await startHarness({ role: 'ingress', env: slackEnv });
      if (mode === 'socket') await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'Socket Mode');
      const dir = mkdtempSync(path.join(tmpdir(), 'cs-session-stop-'));
      writeFileSync(path.join(dir, 'script.json'), JSON.stringify(script));
      writeFileSync(
        path.join(dir, 'policy.yaml'),
        'version: 1\nrules:\n  - name: sleep\n    tool: run_command\n    command: sleep\n    outcome: allow\n',
      );
      worker = runCli(['start', '--role=worker'], {
        ...slackEnv,
        DATABASE_URL: h.db.url,
        AI_PROVIDER: 'scripted',
        SCRIPTED_MODEL_SCRIPT: path.join(dir, 'script.json'),
        POLICY_FILE: path.join(dir, 'policy.yaml'),
        ENABLE_RUN_COMMAND: 'true',
        AGENT_WORKSPACE_ROOT: path.join(dir, 'workspace'),
        HTTP_PORT: '0',
        HTTP_HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
      });
      await waitFor(
        async () =>
          Number((await h.app.pool.query('SELECT count(*) AS n FROM countersign.worker_processes')).rows[0].n) >= 1
            ? true
            : undefined,
        30_000,
        'the worker process',
      );
    });
    afterAll(async () => {
      worker?.child.kill('SIGKILL');
      await h.stop();
      await fake.close();
    });

    const send = async (event: Record<string, unknown>) => {
      if (mode === 'socket') {
        await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, event)));
        return;
      }
      const attempts = await fake.postWithRetries(
        `http://127.0.0.1:${h.app.http.port}/slack/events`,
        { json: eventCallback(fake.team, event) },
        { signingSecret: SECRET, delaysMs: [] },
      );
      expect(attempts.at(-1)?.status).toBe(200);
    };

    it('stops the turn there: the command ends, nothing else runs, and the session leaves processing', async () => {
      const m = appMention({ user: ALICE, channel: CHANNEL, text: `<@${fake.botUserId}> wait for the batch` });
      await send(m);
      const conversation = `slack:${fake.team}:${CHANNEL}:${m.ts}`;
      await waitFor(
        async () => {
          const { rows } = await h.app.pool.query(
            `SELECT t.status FROM countersign.tool_executions t JOIN countersign.work_items w ON w.id = t.work_item_id
           WHERE w.conversation_id = $1`,
            [conversation],
          );
          return rows[0]?.status === 'started' ? true : undefined;
        },
        30_000,
        'the command to start in the worker process',
      );
      expect(fake.world.sessions.get(`${CHANNEL}:${m.ts}`)?.status).toBe('processing');
      const stoppedAt = Date.now();
      await send({
        type: 'agent_session_stopped',
        channel: CHANNEL,
        thread_ts: m.ts,
        user: ALICE,
        streaming_message_ts: [],
        event_ts: `${Math.floor(Date.now() / 1000)}.000200`,
      });
      await waitFor(
        async () => (fake.textIn(CHANNEL, m.ts).some((t) => t.includes('Stopped by')) ? true : undefined),
        20_000,
        'the stopped reply',
      );
      await waitFor(
        async () => (fake.world.sessions.get(`${CHANNEL}:${m.ts}`)?.status === 'active' ? true : undefined),
        10_000,
        'the session to leave processing',
      );
      // Well before the 30 s sleep would have ended: the command was ended, not waited for.
      expect(Date.now() - stoppedAt).toBeLessThan(20_000);
      const { rows } = await h.app.pool.query(
        `SELECT status, stopped_by FROM countersign.work_items WHERE conversation_id = $1`,
        [conversation],
      );
      expect(rows.map((r) => r.status)).toEqual(['cancelled']);
      expect(rows[0].stopped_by).toMatchObject({ platform: 'slack', userId: ALICE });
      // Once the worker has let go of every job, a late model round would have shown itself: none came.
      await jobsIdle(h.app.pool);
      expect(fake.textIn(CHANNEL, m.ts).some((t) => t.includes('the batch finished'))).toBe(false);
    });
  },
);
