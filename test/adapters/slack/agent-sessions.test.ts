import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import {
  appMention,
  blockAction,
  buttonIn,
  eventCallback,
  eventsApiEnvelope,
  interactiveEnvelope,
} from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { countingTool, slowTool } from '../../helpers/tools.ts';

const CHANNEL = 'C0OPS00001';
const ALICE = 'U0ALICE001';

const runs: string[] = [];
const slowCheck = slowTool('slow_check', runs, { ms: 3000 });

const script = {
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
      rounds: [{ toolCalls: [{ name: 'deploy', args: { service: 'prod' } }] }, { text: 'done: {{lastToolResult}}' }],
    },
    { rounds: [{ text: 'hello' }] },
  ],
};

async function start(fake: FakeSlack): Promise<Harness> {
  const h = await startHarness({
    tools: [slowCheck, countingTool('deploy', runs, { risk: 'medium', result: 'deployed' })],
    script,
    env: fake.env({ SLACK_STREAMING: 'off' }),
  });
  await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  return h;
}

describe('Slack agent sessions', () => {
  let fake: FakeSlack;
  let h: Harness;
  beforeAll(async () => {
    fake = await FakeSlack.start();
    h = await start(fake);
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  const mention = async (text: string) => {
    const event = appMention({ user: ALICE, channel: CHANNEL, text: `<@${fake.botUserId}> ${text}` });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, event)));
    return event;
  };
  const sessionOf = (ts: string) => fake.world.sessions.get(`${CHANNEL}:${ts}`);

  it('follows the turn: processing → suspended (card) → processing (approved) → active, titled from the request', async () => {
    const m = await mention('deploy prod please');
    const card = await waitFor(
      async () =>
        fake.messages.find((x) => x.thread_ts === m.ts && JSON.stringify(x.blocks ?? []).includes('"Approve"')),
      20_000,
      'the card',
    );
    await waitFor(async () => (sessionOf(m.ts)?.status === 'suspended' ? true : undefined), 10_000, 'suspended');
    const approve = buttonIn(card.blocks, 'Approve');
    await fake.deliver(
      interactiveEnvelope(
        blockAction(fake.team, {
          user: ALICE,
          channel: CHANNEL,
          messageTs: card.ts,
          threadTs: m.ts,
          value: approve.value,
          actionId: approve.action_id,
        }),
      ),
    );
    await waitFor(async () => (sessionOf(m.ts)?.history.at(-1) === 'active' ? true : undefined), 20_000, 'active');
    const session = sessionOf(m.ts)!;
    expect(session.history).toEqual(['processing', 'suspended', 'processing', 'active']);
    expect(session.title).toBe('deploy prod please');
    expect(session.initiator).toBe(ALICE);
  });

  it('renames a session titled from a greeting once a request says what the conversation is about', async () => {
    const m = await mention('hi');
    await waitFor(async () => (sessionOf(m.ts)?.history.at(-1) === 'active' ? true : undefined), 20_000, 'active');
    expect(sessionOf(m.ts)!.title).toBe('hi');
    const follow = appMention({
      user: ALICE,
      channel: CHANNEL,
      text: 'what changed in the billing service today?',
      thread_ts: m.ts,
    });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, follow)));
    await waitFor(
      async () => (sessionOf(m.ts)?.title === 'what changed in the billing service today?' ? true : undefined),
      20_000,
      'the rename',
    );
    const renames = fake.calls.filter((c) => c.method === 'agents.sessions.rename');
    expect(renames).toHaveLength(1);
    // A third request with substance does not rename again: the title is already a real one.
    const third = appMention({ user: ALICE, channel: CHANNEL, text: 'and in the payments service?', thread_ts: m.ts });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, third)));
    await waitFor(
      async () => (sessionOf(m.ts)?.history.filter((x) => x === 'active').length === 3 ? true : undefined),
      20_000,
      'the third answer',
    );
    expect(fake.calls.filter((c) => c.method === 'agents.sessions.rename')).toHaveLength(1);
    expect(sessionOf(m.ts)!.title).toBe('what changed in the billing service today?');
  });

  it('closes the session when housekeeping expires its conversation', async () => {
    const m = await mention('summarise the incident channel');
    await waitFor(async () => (sessionOf(m.ts)?.history.at(-1) === 'active' ? true : undefined), 20_000, 'active');
    const conversation = `slack:${fake.team}:${CHANNEL}:${m.ts}`;
    const { pool } = h.app;
    // Past the retention (90 days by default): the housekeeping job deletes it.
    await pool.query(
      `UPDATE countersign.work_items SET finished_at = now() - interval '91 days' WHERE conversation_id = $1`,
      [conversation],
    );
    await pool.query(
      `UPDATE countersign.conversations SET last_activity_at = now() - interval '91 days' WHERE id = $1`,
      [conversation],
    );
    await pool.query(`SELECT graphile_worker.add_job('countersign_housekeeping', '{}'::json, priority => 10000)`);
    await waitFor(async () => (sessionOf(m.ts)?.status === 'closed' ? true : undefined), 20_000, 'closed');
    const { rows } = await pool.query(`SELECT 1 FROM countersign.conversations WHERE id = $1`, [conversation]);
    expect(rows).toHaveLength(0);
  });

  it('stops the running turn on agent_session_stopped: nothing else runs, and the status leaves processing', async () => {
    const m = await mention('check the api');
    await waitFor(async () => (runs.includes('api') ? true : undefined), 20_000, 'the tool to start');
    expect(sessionOf(m.ts)?.status).toBe('processing');
    await fake.deliver(
      eventsApiEnvelope(
        eventCallback(fake.team, {
          type: 'agent_session_stopped',
          channel: CHANNEL,
          thread_ts: m.ts,
          user: ALICE,
          streaming_message_ts: [],
          event_ts: `${Math.floor(Date.now() / 1000)}.000100`,
        }),
      ),
    );
    await waitFor(
      async () => (fake.textIn(CHANNEL, m.ts).some((t) => t.includes('Stopped by')) ? true : undefined),
      20_000,
      'the stopped reply',
    );
    await waitFor(async () => (sessionOf(m.ts)?.status === 'active' ? true : undefined), 10_000, 'active');
    const { rows } = await h.app.pool.query(`SELECT status FROM countersign.work_items WHERE conversation_id = $1`, [
      `slack:${fake.team}:${CHANNEL}:${m.ts}`,
    ]);
    expect(rows.map((r) => r.status)).toEqual(['cancelled']);
    // The model was not asked again after the stop.
    expect(fake.textIn(CHANNEL, m.ts).some((t) => t.includes('checked:'))).toBe(false);
  });
});

describe('suggested prompts when a person opens the agent', () => {
  let fake: FakeSlack;
  let h: Harness;
  beforeAll(async () => {
    fake = await FakeSlack.start();
    h = await start(fake);
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('lists the skills the person can run, at most four, as prompts a click sends', async () => {
    await fake.deliver(
      eventsApiEnvelope(
        eventCallback(fake.team, {
          type: 'assistant_thread_started',
          assistant_thread: {
            user_id: ALICE,
            context: { channel_id: CHANNEL, team_id: fake.team },
            channel_id: 'D0ALICE001',
            thread_ts: '1729999327.187299',
          },
          event_ts: '1729999327.200000',
        }),
      ),
    );
    const set = await waitFor(
      async () => fake.world.suggestedPrompts.get('D0ALICE001:1729999327.187299'),
      10_000,
      'the suggested prompts',
    );
    const skills = h.app.skills.list();
    expect(skills.length).toBeGreaterThan(0);
    expect(set.prompts.map((p) => p.title)).toEqual(skills.slice(0, 4).map((s) => s.name));
    for (const p of set.prompts) expect(p.message).toMatch(new RegExp(`^Use the ${p.title} skill`));
  });
});

describe('a workspace whose app is not declared as an agent', () => {
  let fake: FakeSlack;
  let h: Harness;
  beforeAll(async () => {
    fake = await FakeSlack.start({ agent: false });
    h = await start(fake);
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('is tried once, then left alone: the replies go on without sessions', async () => {
    for (const text of ['hi one', 'hi two', 'hi three']) {
      const m = appMention({ user: ALICE, channel: CHANNEL, text: `<@${fake.botUserId}> ${text}` });
      await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, m)));
      await waitFor(async () => (fake.textIn(CHANNEL, m.ts).includes('hello') ? true : undefined), 20_000, 'the reply');
    }
    const tries = fake.calls.filter((c) => c.method === 'agents.sessions.setStatus');
    expect(tries).toHaveLength(1);
    expect(tries[0]!.error).toBe('not_authorized');
  });
});
