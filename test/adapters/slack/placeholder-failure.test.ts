import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack, type ForcedFailure } from '../../fakes/slack/fake-slack.ts';
import { appMention, eventCallback } from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { WebClient } from '@slack/web-api';
import { WorkItem } from '../../../src/core/work-item.ts';
import { SlackOutbound } from '../../../src/adapters/slack/outbound.ts';
import { replyMetadata } from '../../../src/adapters/slack/tagged-posts.ts';
import { RateBuckets } from '../../../src/reply/rate-bucket.ts';

const ALICE = 'U0ALICE001';
const CHANNEL = 'C0PLACEHLD';
const SECRET = 'placeholder-signing-secret';

/**
 * The worker posts a turn's "…" placeholder before the turn starts (the ingress makes no platform
 * call). Countersign's Slack client does not retry (retryConfig: { retries: 0 }), so a failed post
 * fails the graphile-worker job, and graphile-worker's retry (after ~e¹ ≈ 2.7 s) runs the turn. The
 * message must not be lost, and the person must see one reply, not a stray placeholder beside it.
 */
describe('a failing placeholder post', () => {
  let fake: FakeSlack;
  let h: Harness;
  beforeAll(async () => {
    fake = await FakeSlack.start({ pingIntervalMs: 0 });
    h = await startHarness({
      script: { rules: [{ rounds: [{ text: 'echo: {{lastUser}}' }] }] },
      env: {
        SLACK_BOT_TOKEN: fake.botToken,
        SLACK_API_URL: fake.apiUrl,
        SLACK_MODE: 'http',
        SLACK_SIGNING_SECRET: SECRET,
        SLACK_STREAMING: 'off',
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  const cases: Array<[string, ForcedFailure]> = [
    ['answered {ok:false, error:"fatal_error"}', { error: 'fatal_error' }],
    ['answered HTTP 500 internal_error', { status: 500, error: 'internal_error' }],
  ];

  for (const [how, failure] of cases) {
    it(`still answers the message, once, when the placeholder post is ${how}`, async () => {
      const text = `placeholder ${failure.error}`;
      const mention = appMention({ user: ALICE, channel: CHANNEL, text });
      const postsBefore = fake.calls.filter((c) => c.method === 'chat.postMessage').length;
      fake.failNext('chat.postMessage', failure);

      const res = await fake.post(
        `http://127.0.0.1:${h.app.http.port}/slack/events`,
        { json: eventCallback(fake.team, mention) },
        { signingSecret: SECRET },
      );
      expect(res.status).toBe(200);

      const expected = `echo: ${text}`;
      await waitFor(
        async () => (fake.textIn(CHANNEL, mention.ts).includes(expected) ? true : undefined),
        20_000,
        `"${expected}" in the thread`,
      );
      // One reply in the thread: the failed post left nothing, the retry's placeholder became the answer.
      expect(fake.botMessages(CHANNEL, mention.ts).map((m) => m.text)).toEqual([expected]);
      const posts = fake.calls.filter((c) => c.method === 'chat.postMessage').slice(postsBefore);
      expect(posts.map((c) => [c.status, c.error])).toEqual([
        [failure.status ?? 200, failure.error],
        [200, undefined],
      ]);
      // One turn, run twice: the first attempt failed at the placeholder, graphile-worker's retry answered.
      const items = await waitFor(
        async () => {
          const { rows } = await h.app.pool.query<{ status: string; attempts: number }>(
            `SELECT status, attempts FROM countersign.work_items WHERE conversation_id = $1`,
            [`slack:${fake.team}:${CHANNEL}:${mention.ts}`],
          );
          return rows.every((r) => r.status === 'done') ? rows : undefined;
        },
        10_000,
        'the turn to settle',
      );
      expect(items).toEqual([{ status: 'done', attempts: 2 }]);
    }, 30_000);
  }
});

/**
 * A worker killed after Slack took its "…" placeholder and before it recorded the message's ts: the
 * next attempt must find that message again (by the work item's message metadata) and answer in it,
 * instead of posting a second placeholder and leaving the first one stray.
 */
describe('a worker killed between posting the placeholder and recording it', () => {
  let fake: FakeSlack;
  let db: TestDatabase;
  let ingress: Harness;
  let worker: Harness | undefined;
  const env = () => ({
    SLACK_BOT_TOKEN: fake.botToken,
    SLACK_API_URL: fake.apiUrl,
    SLACK_MODE: 'http',
    SLACK_SIGNING_SECRET: SECRET,
    SLACK_STREAMING: 'off',
  });
  beforeAll(async () => {
    fake = await FakeSlack.start({ pingIntervalMs: 0 });
    db = await createTestDatabase();
    // Only an ingress at first: nobody runs the turn until the "killed" attempt is staged.
    ingress = await startHarness({ db, role: 'ingress', env: env() });
  });
  afterAll(async () => {
    await worker?.stop();
    await ingress.stop();
    await fake.close();
    await db.drop();
  });

  it('answers in the placeholder the killed attempt posted, leaving no stray "…" and no other app’s message taken', async () => {
    const channel = 'C0KILLPOST';
    const mention = appMention({ user: ALICE, channel, text: 'killed mid-post' });
    const res = await fake.post(
      `http://127.0.0.1:${ingress.app.http.port}/slack/events`,
      { json: eventCallback(fake.team, mention) },
      { signingSecret: SECRET },
    );
    expect(res.status).toBe(200);
    const item = await waitFor(
      async () => {
        const { rows } = await ingress.app.pool.query<{ item: unknown }>(
          `SELECT item FROM countersign.work_items WHERE conversation_id = $1`,
          [`slack:${fake.team}:${channel}:${mention.ts}`],
        );
        return rows[0] ? WorkItem.parse(rows[0].item) : undefined;
      },
      10_000,
      'the work item',
    );
    // What the killed attempt did: it started (attempt 1) and Slack took its placeholder, tagged.
    await ingress.app.pool.query(`UPDATE countersign.work_items SET attempts = 1 WHERE id = $1`, [item.id]);
    const client = new WebClient(fake.botToken, { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } });
    const killed = await new SlackOutbound(client, new RateBuckets(ingress.app.pool), 45).postTagged(
      item.reply,
      '…',
      item.id,
      false,
    );
    // Hostile: another app's message in the thread carries the same metadata; it must not be taken.
    const impostor = fake.world.add(
      {
        team: fake.team,
        channel,
        thread_ts: mention.ts,
        user: 'U0OTHERBOT',
        bot_id: 'B0OTHERBOT',
        text: '…',
        blocks: [],
        metadata: replyMetadata(item.id),
      },
      'chat.postMessage',
    );

    worker = await startHarness({
      db,
      role: 'worker',
      env: env(),
      script: { rules: [{ rounds: [{ text: 'echo: {{lastUser}}' }] }] },
    });
    const expected = 'echo: killed mid-post';
    await waitFor(
      async () => (fake.textIn(channel, mention.ts).includes(expected) ? true : undefined),
      20_000,
      `"${expected}" in the thread`,
    );
    // One message of ours in the thread: the killed attempt's placeholder, now the answer.
    expect(fake.botMessages(channel, mention.ts).map((m) => [m.ts, m.text])).toEqual([[killed.messageId, expected]]);
    expect(impostor.text).toBe('…');
    expect(impostor.edits).toBe(0);
  }, 40_000);
});
