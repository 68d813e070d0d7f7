import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack, type ForcedFailure } from '../../fakes/slack/fake-slack.ts';
import { appMention, eventCallback } from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';

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
