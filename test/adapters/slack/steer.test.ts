import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { appMention, eventCallback, eventsApiEnvelope, threadReply } from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { countingTool, slowTool } from '../../helpers/tools.ts';

const CHANNEL = 'C0OPS00001';
const ALICE = 'U0ALICE001';

const runs: string[] = [];
const slowCheck = slowTool('slow_check', runs);

describe('steering a running turn on Slack (the default mode in threads)', () => {
  let fake: FakeSlack;
  let h: Harness;

  beforeAll(async () => {
    fake = await FakeSlack.start();
    h = await startHarness({
      tools: [slowCheck, countingTool('deploy', runs, { risk: 'medium', result: 'deployed' })],
      script: {
        rules: [
          {
            match: 'check the api',
            rounds: [
              { toolCalls: [{ name: 'slow_check', args: { service: 'api' } }] },
              { text: 'checked: {{lastToolResult}}' },
            ],
          },
          {
            match: 'deploy prod',
            rounds: [{ toolCalls: [{ name: 'deploy', args: { service: 'prod' } }] }, { text: 'ok' }],
          },
          { rounds: [{ text: 'answer to: {{lastUser}}' }] },
        ],
      },
      env: fake.env({ SLACK_STREAMING: 'off' }),
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('a thread reply sent while a tool runs joins the turn: one answer, the tool run once', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: `<@${fake.botUserId}> check the api` });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    await waitFor(async () => (runs.includes('api') ? true : undefined), 20_000, 'the tool to start');
    const reply = threadReply({ user: ALICE, channel: CHANNEL, text: 'also say hi', thread_ts: mention.ts });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, reply)));
    await waitFor(
      async () =>
        fake.textIn(CHANNEL, mention.ts).some((t) => t.includes('answer to: also say hi')) ? true : undefined,
      20_000,
      'the steered answer',
    ).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; thread: ${JSON.stringify(fake.textIn(CHANNEL, mention.ts))}`);
    });
    expect(runs.filter((r) => r === 'api')).toHaveLength(1);
    // One bot reply in the thread (the steered message got no turn, and no placeholder, of its own).
    const botReplies = fake.messages.filter(
      (m) =>
        m.channel === CHANNEL &&
        m.thread_ts === mention.ts &&
        m.ts !== mention.ts &&
        m.user === fake.botUserId &&
        !m.ephemeralFor,
    );
    expect(botReplies).toHaveLength(1);
    const { rows } = await h.app.pool.query(
      `SELECT count(*)::int AS n FROM countersign.work_items WHERE result ? 'takenInto'`,
    );
    expect(rows[0]?.n).toBe(1);
  });

  it('a thread reply while a card waits supersedes the card, which says so and can no longer be approved', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: `<@${fake.botUserId}> deploy prod` });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    const card = await waitFor(
      async () =>
        fake.messages.find((m) => m.thread_ts === mention.ts && JSON.stringify(m.blocks ?? []).includes('"Approve"')),
      20_000,
      'the card',
    );
    const reply = threadReply({ user: ALICE, channel: CHANNEL, text: 'no, staging', thread_ts: mention.ts });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, reply)));
    await waitFor(
      async () => {
        const now = fake.messages.find((m) => m.channel === CHANNEL && m.ts === card.ts)!;
        return now.text.includes('Superseded by a newer message') && !JSON.stringify(now.blocks).includes('"Approve"')
          ? true
          : undefined;
      },
      20_000,
      'the card to show it was superseded',
    );
    await waitFor(
      async () =>
        fake.textIn(CHANNEL, mention.ts).some((t) => t.includes('answer to: no, staging')) ? true : undefined,
      20_000,
      'the new answer',
    );
    expect(runs).not.toContain('prod');
  });
});
