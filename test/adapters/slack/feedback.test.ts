import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import {
  appMention,
  blockAction,
  eventCallback,
  eventsApiEnvelope,
  interactiveEnvelope,
} from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { runCli } from '../../helpers/processes.ts';

const CHANNEL = 'C0OPS00001';
const ALICE = 'U0ALICE001';

type FeedbackElement = {
  type: string;
  action_id: string;
  positive_button: { text: { text: string }; value: string };
  negative_button: { text: { text: string }; value: string };
};

describe('feedback buttons on Slack answers', () => {
  let fake: FakeSlack;
  let h: Harness;
  beforeAll(async () => {
    fake = await FakeSlack.start();
    h = await startHarness({
      script: { rules: [{ rounds: [{ text: 'The api is healthy.' }] }] },
      env: fake.env({ SLACK_STREAMING: 'off' }),
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('puts Slack’s own thumbs on the final answer; a vote is recorded, changeable, counted and exported', async () => {
    const m = appMention({ user: ALICE, channel: CHANNEL, text: `<@${fake.botUserId}> how is the api?` });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, m)));
    const answer = await waitFor(
      async () =>
        fake.messages.find(
          (x) =>
            x.thread_ts === m.ts &&
            x.text.includes('The api is healthy.') &&
            JSON.stringify(x.blocks).includes('context_actions'),
        ),
      20_000,
      'the answer with feedback buttons',
    );
    const block = (answer.blocks as Array<{ type: string; elements?: FeedbackElement[] }>).find(
      (b) => b.type === 'context_actions',
    )!;
    const feedback = block.elements![0]!;
    expect(feedback.type).toBe('feedback_buttons');
    expect(feedback.positive_button.text.text).toBe('👍');
    // The Stop button is gone from the finished answer.
    expect(JSON.stringify(answer.blocks)).not.toContain('"Stop"');

    const vote = (value: string) =>
      fake.deliver(
        interactiveEnvelope({
          ...blockAction(fake.team, {
            user: ALICE,
            channel: CHANNEL,
            messageTs: answer.ts,
            threadTs: m.ts,
            value,
            actionId: feedback.action_id,
          }),
        }),
      );
    const acknowledged = (n: number) =>
      waitFor(
        async () =>
          fake.messages.filter((x) => x.ephemeralFor === ALICE && /recorded with this answer/.test(x.text)).length >= n
            ? true
            : undefined,
        10_000,
        `acknowledgement ${n}`,
      );
    // A person changing their mind: 👎, seen acknowledged, then 👍.
    await vote(feedback.negative_button.value);
    await acknowledged(1);
    await vote(feedback.positive_button.value);
    await acknowledged(2);
    const workItemId = feedback.positive_button.value.split(':').at(-1)!;
    const { rows } = await h.app.pool.query(
      `SELECT user_id, vote FROM countersign.turn_feedback WHERE work_item_id = $1`,
      [workItemId],
    );
    expect(rows).toEqual([{ user_id: ALICE, vote: 'up' }]);

    const metrics = await (await fetch(`http://127.0.0.1:${h.app.http.port}/metrics`)).text();
    expect(metrics).toMatch(/countersign_feedback_total\{platform="slack",vote="up"\} 1/);
    expect(metrics).toMatch(/countersign_feedback_total\{platform="slack",vote="down"\} 1/);

    const exported = runCli(['audit', '--outcome=feedback'], { DATABASE_URL: h.db.url, LOG_LEVEL: 'silent' });
    expect((await exported.exited).code).toBe(0);
    const lines = exported
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { detail: { vote: string; workItemId: string } });
    expect(lines.map((l) => l.detail.vote)).toEqual(['down', 'up']);
    expect(lines.every((l) => l.detail.workItemId === workItemId)).toBe(true);
  });

  it('refuses a vote on a turn that is not on record', async () => {
    const m = appMention({ user: ALICE, channel: CHANNEL, text: `<@${fake.botUserId}> again` });
    await fake.deliver(
      interactiveEnvelope(
        blockAction(fake.team, {
          user: ALICE,
          channel: CHANNEL,
          messageTs: m.ts,
          value: 'feedback:up:00000000-0000-4000-8000-000000000000',
          actionId: 'countersign_feedback',
        }),
      ),
    );
    await waitFor(
      async () => fake.messages.find((x) => x.ephemeralFor === ALICE && /no longer on record/.test(x.text)),
      10_000,
      'the refusal',
    );
  });
});

describe('feedback buttons under Slack native streaming', () => {
  let fake: FakeSlack;
  let h: Harness;
  beforeAll(async () => {
    fake = await FakeSlack.start();
    h = await startHarness({
      script: { rules: [{ rounds: [{ text: 'Streamed and done.', chunkSize: 4, delayMs: 20 }] }] },
      env: fake.env(),
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('adds the thumbs when the stream stops (chat.stopStream blocks)', async () => {
    const m = appMention({ user: ALICE, channel: CHANNEL, text: `<@${fake.botUserId}> stream please` });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, m)));
    const answer = await waitFor(
      async () =>
        fake.messages.find(
          (x) =>
            x.thread_ts === m.ts &&
            x.streaming === 'completed' &&
            JSON.stringify(x.blocks).includes('feedback_buttons'),
        ),
      20_000,
      'the streamed answer with feedback buttons',
    );
    expect(answer.text).toContain('Streamed and done.');
    expect(fake.calls.some((c) => c.method === 'chat.startStream')).toBe(true);
  });
});
