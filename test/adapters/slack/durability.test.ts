import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { appMention, eventCallback, eventsApiEnvelope, slashCommand } from '../../fixtures/slack/events.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startHarness, waitFor } from '../../helpers/harness.ts';
import { TcpProxy } from '../../helpers/tcp-proxy.ts';
import { inviteHint } from '../../../src/adapters/slack/inbound.ts';

const ALICE = 'U0ALICE001';
const CHANNEL = 'C0DURABLE1';
const SECRET = 'durability-signing-secret';

/**
 * A Countersign whose database sits behind a TCP proxy the test can cut, against a fake Slack that
 * redelivers what is not acknowledged, as Slack does.
 */
async function start(mode: 'socket' | 'http') {
  const fake = await FakeSlack.start();
  const db = await createTestDatabase();
  const u = new URL(db.url);
  const proxy = await TcpProxy.start({ host: u.hostname, port: Number(u.port || 5432) });
  const proxied: TestDatabase = { url: TcpProxy.rewrite(db.url, proxy.port), drop: () => db.drop() };
  const h = await startHarness({
    db: proxied,
    script: { rules: [{ rounds: [{ text: 'echo: {{lastUser}}' }] }] },
    env: {
      SLACK_BOT_TOKEN: fake.botToken,
      SLACK_API_URL: fake.apiUrl,
      SLACK_STREAMING: 'off',
      ...(mode === 'socket'
        ? { SLACK_APP_TOKEN: fake.appToken }
        : { SLACK_MODE: 'http', SLACK_SIGNING_SECRET: SECRET }),
    },
  });
  if (mode === 'socket') await fake.socketMode.waitForConnections();
  return {
    fake,
    proxy,
    h,
    url: () => `http://127.0.0.1:${h.app.http.port}/slack/events`,
    async stop() {
      proxy.restore();
      await h.stop();
      await proxy.close();
      await fake.close();
      await db.drop();
    },
  };
}

type Setup = Awaited<ReturnType<typeof start>>;

const count = async (s: Setup, sql: string, values: unknown[] = []) =>
  Number((await s.h.app.pool.query<{ n: number }>(sql, values)).rows[0]?.n);

/** Waits for the answer, then checks it is the only one and that one work item and one mark exist. */
async function expectExactlyOneTurn(s: Setup, mention: { ts: string; text: string }, eventId: string) {
  const expected = `echo: ${mention.text.replace(/<@\w+>/g, '').trim()}`;
  await waitFor(
    async () => (s.fake.textIn(CHANNEL, mention.ts).includes(expected) ? true : undefined),
    30_000,
    `"${expected}" in the thread`,
  ).catch(async (error: Error) => {
    // Where the turn got to, so that a failure on a loaded machine says which part stalled.
    const { rows } = await s.h.app.pool.query(
      `SELECT w.status, w.attempts, w.error, j.locked_by, j.attempts AS job_attempts, j.last_error, j.run_at
         FROM countersign.work_items w LEFT JOIN graphile_worker._private_jobs j ON j.payload->>'workItemId' = w.id::text
        WHERE w.conversation_id LIKE '%' || $1`,
      [mention.ts],
    );
    let poolFailure = 'none';
    void s.h.app.failed.then((reason) => (poolFailure = String(reason)));
    await new Promise((r) => setTimeout(r, 10));
    throw new Error(`${error.message}; work items: ${JSON.stringify(rows)}; worker pool failure: ${poolFailure}`);
  });
  expect(s.fake.botMessages(CHANNEL, mention.ts).map((m) => m.text)).toEqual([expected]);
  const conversation = `slack:${s.fake.team}:${CHANNEL}:${mention.ts}`;
  expect(
    await count(s, `SELECT count(*)::int AS n FROM countersign.work_items WHERE conversation_id = $1`, [conversation]),
  ).toBe(1);
  expect(
    await count(s, `SELECT count(*)::int AS n FROM countersign.inbound_events WHERE event_id = $1`, [
      `slack:${eventId}`,
    ]),
  ).toBe(1);
}

describe('Slack HTTP mode while the database is unreachable', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await start('http');
  });
  afterAll(() => s.stop());

  it('answers non-2xx while it cannot enqueue, and Slack’s retry after the database is back makes exactly one turn', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'cut over http' });
    const body = eventCallback(s.fake.team, mention);
    s.proxy.cut();
    const attempts = await s.fake.postWithRetries(
      s.url(),
      { json: body },
      {
        signingSecret: SECRET,
        delaysMs: [100, 100, 100],
        beforeRetry: (retryNum) => {
          if (retryNum === 2) s.proxy.restore();
        },
      },
    );
    expect(attempts.map((a) => [a.retryNum, a.status])).toEqual([
      [0, 500],
      [1, 500],
      [2, 200],
    ]);
    await expectExactlyOneTurn(s, mention, body.event_id);
    // Slack's last retry (sent anyway, e.g. after a lost response) is acknowledged and ignored.
    const late = await s.fake.post(s.url(), { json: body }, { signingSecret: SECRET, retryNum: 3 });
    expect(late.status).toBe(200);
    await expectExactlyOneTurn(s, mention, body.event_id);
  });

  it('verifies a body whose multibyte character straddles two TCP chunks', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'naïve café — ✓' });
    const body = eventCallback(s.fake.team, mention);
    const json = JSON.stringify(body);
    // A cut one byte into the two-byte "ï".
    const cut = Buffer.byteLength(json.slice(0, json.indexOf('ï')), 'utf8') + 1;
    const res = await s.fake.post(s.url(), { json: body }, { signingSecret: SECRET, splitAt: [cut] });
    expect(res.status).toBe(200);
    await expectExactlyOneTurn(s, mention, body.event_id);
  });

  it('answers /skill in a channel it is not in with how to invite it, through response_url', async () => {
    const channel = 'C0NOTJOIN1';
    s.fake.world.botNotIn.add(channel);
    const responseUrl = s.fake.responseUrl();
    const res = await s.fake.post(
      s.url(),
      {
        form: {
          ...slashCommand(s.fake.team, { command: '/skill', text: 'runbook restart-api', user: ALICE, channel }),
          response_url: responseUrl,
        },
      },
      { signingSecret: SECRET },
    );
    expect(res.status).toBe(200);
    const answer = await waitFor(
      async () => s.fake.responses.find((r) => responseUrl.endsWith(r.path)),
      10_000,
      'the response_url answer',
    );
    expect(answer.body).toMatchObject({ response_type: 'ephemeral', text: inviteHint('countersign', channel) });
    expect(answer.body.text).toContain('/invite @countersign');
    expect(
      await count(s, `SELECT count(*)::int AS n FROM countersign.work_items WHERE conversation_id LIKE $1`, [
        `%${channel}%`,
      ]),
    ).toBe(0);
  });
});

describe('Slack Socket Mode while the database is unreachable', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await start('socket');
  });
  afterAll(() => s.stop());

  it('leaves the envelope unacknowledged while it cannot enqueue; Slack’s redelivery makes exactly one turn', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'cut over socket mode' });
    const body = eventCallback(s.fake.team, mention);
    s.proxy.cut();
    const { ack, envelopeIds } = await s.fake.deliverUntilAcked(eventsApiEnvelope(body), {
      ackTimeoutMs: 1500,
      delaysMs: [100, 100, 100],
      beforeRetry: (retryNum) => {
        if (retryNum === 2) s.proxy.restore();
      },
    });
    expect(envelopeIds).toHaveLength(3);
    expect(ack?.envelope_id).toBe(envelopeIds[2]);
    // The first two envelopes were never acknowledged.
    expect(s.fake.socketMode.acks.filter((a) => envelopeIds.slice(0, 2).includes(a.envelope_id))).toEqual([]);
    await expectExactlyOneTurn(s, mention, body.event_id);
  });
});
