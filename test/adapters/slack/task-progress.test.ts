import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { appMention, eventCallback, eventsApiEnvelope } from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { slowTool } from '../../helpers/tools.ts';

const CHANNEL = 'C0OPS00001';
const ALICE = 'U0ALICE001';

describe('tool progress as task_update chunks in a Slack native stream', () => {
  let fake: FakeSlack;
  let h: Harness;
  const runs: string[] = [];
  beforeAll(async () => {
    fake = await FakeSlack.start();
    h = await startHarness({
      tools: [slowTool('slow_check', runs, { ms: 1200 })],
      script: {
        rules: [
          {
            rounds: [
              { text: 'Checking the api now. ', toolCalls: [{ name: 'slow_check', args: { service: 'api' } }] },
              { text: 'It is fine: {{lastToolResult}}.' },
            ],
          },
        ],
      },
      env: fake.env(),
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('shows the call as a task that goes from in_progress to complete, between the texts', async () => {
    const m = appMention({ user: ALICE, channel: CHANNEL, text: `<@${fake.botUserId}> check the api` });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, m)));
    const answer = await waitFor(
      async () =>
        fake.messages.find((x) => x.thread_ts === m.ts && x.streaming === 'completed' && x.text.includes('It is fine')),
      20_000,
      'the streamed answer',
    );
    const tasks = (answer.chunks ?? []).filter((c) => c.type === 'task_update');
    expect(tasks.length).toBeGreaterThan(0);
    expect(new Set(tasks.map((t) => t.title))).toEqual(new Set(['slow_check']));
    expect(tasks.at(-1)!.status).toBe('complete');
    // The first state Slack saw was the call running (the tool takes 1.2 s).
    expect(tasks[0]!.status).toBe('in_progress');
    expect(answer.text).toContain('Checking the api now.');
    // What the model said before the call heads the timeline, ahead of the call's first state.
    const planAt = (answer.chunks ?? []).findIndex((c) => c.type === 'plan_update');
    expect(planAt).toBeGreaterThanOrEqual(0);
    expect(answer.chunks![planAt]).toEqual({ type: 'plan_update', title: 'Checking the api now.' });
    expect(planAt).toBeLessThan((answer.chunks ?? []).findIndex((c) => c.type === 'task_update'));
    expect(runs).toEqual(['api']);
  });

  it('is refused by the fake for a chunk outside the documented shapes', async () => {
    const res = await fetch(`${fake.apiUrl}chat.startStream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fake.botToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        channel: CHANNEL,
        thread_ts: '1.000001',
        recipient_user_id: ALICE,
        recipient_team_id: fake.team,
        chunks: [{ type: 'task_update', id: 't1', title: 'x', status: 'done' }],
      }),
    });
    const body = (await res.json()) as { ok: boolean; error?: string; response_metadata?: { messages?: string[] } };
    expect(body).toMatchObject({ ok: false, error: 'invalid_arguments' });
    expect(body.response_metadata?.messages?.join(' ')).toMatch(
      /status must be pending, in_progress, complete or error/,
    );
  });
});
