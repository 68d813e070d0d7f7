import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../fakes/slack/fake-slack.ts';
import {
  appMention,
  blockAction,
  botMessage,
  directMessage,
  eventCallback,
  slashCommand,
  threadReply,
} from '../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { countingTool } from '../helpers/tools.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { markdownToMrkdwn } from '../../src/adapters/slack/format.ts';

const runs: string[] = [];
const restartTool = countingTool('restart_service', runs, { risk: 'high', result: 'restarted' });
const script: Script = {
  rules: [
    {
      match: 'restart',
      rounds: [
        { text: 'Restarting.', toolCalls: [{ name: 'restart_service', args: { service: 'api' } }] },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    { match: 'what did i say', rounds: [{ text: 'You asked: {{lastUser}}' }] },
    { match: 'ping', rounds: [{ text: 'Hi <!channel> and <@U999>! **done**' }] },
    { rounds: [{ text: 'echo: {{lastUser}}', chunkSize: 3, delayMs: 5 }] },
  ],
};
const ALICE = 'U0ALICE001';
const CHANNEL = 'C0OPS00001';

const final = (fake: FakeSlack, channel: string, expected: string, thread?: string) =>
  waitFor(
    async () => (fake.textIn(channel, thread).includes(expected) ? true : undefined),
    20_000,
    `"${expected}" in ${channel}`,
  );

describe('Slack adapter in Socket Mode', () => {
  let fake: FakeSlack;
  let h: Harness;
  beforeAll(async () => {
    fake = await FakeSlack.start({ perMinute: { 'chat.update': 50 } });
    h = await startHarness({
      script,
      tools: [restartTool],
      env: {
        SLACK_BOT_TOKEN: fake.botToken,
        SLACK_APP_TOKEN: fake.appToken,
        SLACK_API_URL: fake.apiUrl,
        APPROVERS: `slack:${ALICE}`,
      },
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('answers a mention in a thread, streaming by chat.update, after acking the envelope', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'hello' });
    await fake.deliver('events_api', eventCallback(fake.team, mention));
    await final(fake, CHANNEL, 'echo: hello', mention.ts);
    const reply = fake.messages.find((m) => m.text === 'echo: hello')!;
    expect(reply.thread_ts).toBe(mention.ts);
    expect(reply.edits).toBeGreaterThan(0);
    // Every call, apps.connections.open included, went to SLACK_API_URL.
    expect(fake.calls.some((c) => c.method === 'apps.connections.open')).toBe(true);
  });

  it('answers a DM, and follows up in its thread without a mention, seeing the history', async () => {
    await fake.deliver(
      'events_api',
      eventCallback(fake.team, directMessage({ user: ALICE, channel: 'D0DM000001', text: 'psst' })),
    );
    await final(fake, 'D0DM000001', 'echo: psst');
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'first' });
    await fake.deliver('events_api', eventCallback(fake.team, mention));
    await final(fake, CHANNEL, 'echo: first', mention.ts);
    await fake.deliver(
      'events_api',
      eventCallback(
        fake.team,
        threadReply({ user: ALICE, channel: CHANNEL, text: 'what did i say', thread_ts: mention.ts }),
      ),
    );
    await final(fake, CHANNEL, 'You asked: what did i say', mention.ts);
    // The follow-up ran in the thread's conversation, with the first exchange as its history.
    const texts = await waitFor(
      async () => {
        const { rows } = await h.app.pool.query(
          `SELECT message->>'text' AS text FROM countersign.messages WHERE conversation_id = $1 ORDER BY id`,
          [`slack:${fake.team}:${CHANNEL}:${mention.ts}`],
        );
        return rows.length === 4 ? rows.map((r) => r.text) : undefined;
      },
      10_000,
      'the thread history',
    );
    expect(texts).toEqual(['first', 'echo: first', 'what did i say', 'You asked: what did i say']);
  });

  it('ignores other bots and processes a retried delivery once', async () => {
    await fake.deliver(
      'events_api',
      eventCallback(fake.team, botMessage({ channel: CHANNEL, text: '<@U0BOT00001> hi' })),
    );
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'only once' });
    const envelope = eventCallback(fake.team, mention);
    await fake.deliver('events_api', envelope);
    await fake.deliver('events_api', envelope, { retryAttempt: 1 });
    await final(fake, CHANNEL, 'echo: only once', mention.ts);
    await new Promise((r) => setTimeout(r, 500));
    expect(fake.textIn(CHANNEL, mention.ts).filter((t) => t === 'echo: only once')).toHaveLength(1);
  });

  it('converts Markdown to mrkdwn and never lets the model ping', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'ping everyone' });
    await fake.deliver('events_api', eventCallback(fake.team, mention));
    await final(fake, CHANNEL, 'Hi &lt;!channel&gt; and &lt;@U999&gt;! *done*', mention.ts);
    expect(markdownToMrkdwn('## Title\n- [docs](https://x.y/z) and `<@U1>`')).toBe(
      '*Title*\n• <https://x.y/z|docs> and `<@U1>`',
    );
  });

  it('lists skills ephemerally and runs one with /skill', async () => {
    const list = (await fake.deliver(
      'slash_commands',
      slashCommand(fake.team, { command: '/skills', text: '', user: ALICE, channel: CHANNEL }),
    )) as {
      response_type: string;
      text: string;
    };
    expect(list.response_type).toBe('ephemeral');
    expect(list.text).toContain('runbook');
    await fake
      .deliver(
        'slash_commands',
        slashCommand(fake.team, { command: '/skill', text: 'nosuch thing', user: ALICE, channel: CHANNEL }),
      )
      .then((ack) =>
        expect(ack).toMatchObject({
          response_type: 'ephemeral',
          text: expect.stringMatching(/There is no skill named "nosuch"/),
        }),
      );
    await fake.deliver(
      'slash_commands',
      slashCommand(fake.team, { command: '/skill', text: 'runbook restart-api', user: ALICE, channel: CHANNEL }),
    );
    await waitFor(
      async () => (fake.textIn(CHANNEL).some((t) => t.startsWith('Running skill `runbook`')) ? true : undefined),
      10_000,
      'the skill run',
    );
  });

  it('shows an approval card; a bystander is told privately; Approve runs the tool once; the card loses its buttons', async () => {
    runs.length = 0;
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'restart the api' });
    await fake.deliver('events_api', eventCallback(fake.team, mention));
    const card = await waitFor(
      async () =>
        fake.messages.find((m) => m.thread_ts === mention.ts && JSON.stringify(m.blocks).includes('"Approve"')),
      20_000,
      'the card',
    );
    const actionsBlock = card.blocks.find((b) => (b as { type: string }).type === 'actions') as {
      elements: Array<{ value: string; action_id: string; text: { text: string } }>;
    };
    const approve = actionsBlock.elements.find((e) => e.text.text === 'Approve')!;
    await fake.deliver(
      'interactive',
      blockAction(fake.team, {
        user: 'U0BYSTAND1',
        channel: CHANNEL,
        messageTs: card.ts,
        threadTs: mention.ts,
        value: approve.value,
        actionId: approve.action_id,
      }),
    );
    await waitFor(
      async () => fake.messages.find((m) => m.ephemeralFor === 'U0BYSTAND1'),
      10_000,
      'the private refusal',
    );
    expect(runs).toEqual([]);
    await fake.deliver(
      'interactive',
      blockAction(fake.team, {
        user: ALICE,
        channel: CHANNEL,
        messageTs: card.ts,
        threadTs: mention.ts,
        value: approve.value,
        actionId: approve.action_id,
      }),
    );
    await final(fake, CHANNEL, 'Result: restarted api', mention.ts);
    expect(runs).toEqual(['api']);
    await waitFor(
      async () => (!JSON.stringify(card.blocks).includes('"actions"') ? true : undefined),
      10_000,
      'the card to lose its buttons',
    );
  });

  it('Deny gives the model a denial and runs nothing', async () => {
    runs.length = 0;
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'restart it again' });
    await fake.deliver('events_api', eventCallback(fake.team, mention));
    const card = await waitFor(
      async () => fake.messages.find((m) => m.thread_ts === mention.ts && JSON.stringify(m.blocks).includes('"Deny"')),
      20_000,
      'the card',
    );
    const actionsBlock = card.blocks.find((b) => (b as { type: string }).type === 'actions') as {
      elements: Array<{ value: string; action_id: string; text: { text: string } }>;
    };
    const deny = actionsBlock.elements.find((e) => e.text.text === 'Deny')!;
    await fake.deliver(
      'interactive',
      blockAction(fake.team, {
        user: ALICE,
        channel: CHANNEL,
        messageTs: card.ts,
        threadTs: mention.ts,
        value: deny.value,
        actionId: deny.action_id,
      }),
    );
    await waitFor(
      async () =>
        fake.textIn(CHANNEL, mention.ts).some((t) => t.startsWith('Result: A person denied')) ? true : undefined,
      20_000,
      'the denial',
    );
    expect(runs).toEqual([]);
  });

  it('loses no text when chat.update answers 429 with Retry-After', async () => {
    fake.failNext('chat.update', 2, 1);
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'rate limited reply' });
    await fake.deliver('events_api', eventCallback(fake.team, mention));
    await final(fake, CHANNEL, 'echo: rate limited reply', mention.ts);
  });
});

describe('Slack adapter under load', () => {
  let fake: FakeSlack;
  let h: Harness;
  beforeAll(async () => {
    // Slack's Tier 3 budget for chat.update, enforced by the fake with 429s.
    fake = await FakeSlack.start({ perMinute: { 'chat.update': 50 } });
    h = await startHarness({
      script,
      env: {
        SLACK_BOT_TOKEN: fake.botToken,
        SLACK_APP_TOKEN: fake.appToken,
        SLACK_API_URL: fake.apiUrl,
        SLACK_UPDATES_PER_MINUTE: '45',
      },
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('keeps 50 simultaneous conversations inside the workspace budget, every final message complete', async () => {
    const before = fake.calls.length;
    const mentions = Array.from({ length: 50 }, (_, i) =>
      appMention({ user: ALICE, channel: `C0LOAD${String(i).padStart(4, '0')}`, text: `load ${i}` }),
    );
    await Promise.all(mentions.map((m) => fake.deliver('events_api', eventCallback(fake.team, m))));
    for (const [i, m] of mentions.entries()) {
      await waitFor(
        async () => (fake.textIn(m.channel, m.ts).includes(`echo: load ${i}`) ? true : undefined),
        150_000,
        `conversation ${i}`,
      );
    }
    const calls = fake.calls.slice(before);
    expect(calls.filter((c) => c.status === 429)).toEqual([]);
    // No sliding minute saw more chat.update calls than the configured budget (45/min).
    const writes = calls.filter((c) => c.method === 'chat.update').map((c) => c.at);
    for (const at of writes) expect(writes.filter((w) => w >= at && w < at + 60_000).length).toBeLessThanOrEqual(45);
  }, 200_000);
});

describe('Slack adapter in HTTP mode', () => {
  let fake: FakeSlack;
  let h: Harness;
  const secret = 'test-signing-secret';
  beforeAll(async () => {
    fake = await FakeSlack.start();
    h = await startHarness({
      script,
      env: {
        SLACK_BOT_TOKEN: fake.botToken,
        SLACK_MODE: 'http',
        SLACK_SIGNING_SECRET: secret,
        SLACK_API_URL: fake.apiUrl,
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });
  const url = () => `http://127.0.0.1:${h.app.http.port}/slack/events`;

  it('answers the url_verification challenge', async () => {
    const res = await fake.post(
      url(),
      { json: { type: 'url_verification', token: 'x', challenge: 'c-123' } },
      { signingSecret: secret },
    );
    expect(res).toEqual({ status: 200, text: JSON.stringify({ challenge: 'c-123' }) });
  });

  it('rejects a bad signature with 401 and takes nothing in', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'forged' });
    const res = await fake.post(
      url(),
      { json: eventCallback(fake.team, mention) },
      { signingSecret: secret, badSignature: true },
    );
    expect(res.status).toBe(401);
    const { rows } = await h.app.pool.query(`SELECT count(*)::int AS n FROM countersign.work_items`);
    expect(rows[0].n).toBe(0);
  });

  it('acks a signed event after enqueueing it and answers in the thread; a retry is processed once', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'over http' });
    const envelope = eventCallback(fake.team, mention);
    expect((await fake.post(url(), { json: envelope }, { signingSecret: secret })).status).toBe(200);
    expect((await fake.post(url(), { json: envelope }, { signingSecret: secret, retryNum: 1 })).status).toBe(200);
    await final(fake, CHANNEL, 'echo: over http', mention.ts);
    const { rows } = await h.app.pool.query(`SELECT count(*)::int AS n FROM countersign.work_items`);
    expect(rows[0].n).toBe(1);
  });

  it('answers a slash command with an ephemeral list', async () => {
    const res = await fake.post(
      url(),
      { form: slashCommand(fake.team, { command: '/skills', text: '', user: ALICE, channel: CHANNEL }) },
      { signingSecret: secret },
    );
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toMatchObject({
      response_type: 'ephemeral',
      text: expect.stringContaining('skillmaker'),
    });
  });
});
