import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import {
  appMention,
  blockAction,
  eventCallback,
  eventsApiEnvelope,
  interactiveEnvelope,
} from '../../fixtures/slack/events.ts';
import { countingTool } from '../../helpers/tools.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import type { ModelProvider } from '../../../src/agent/model.ts';
import { ScriptedProvider } from '../../../src/agent/providers/scripted.ts';

const CHANNEL = 'C0OPS00001';
const ALICE = 'U0ALICE001';
const REFUSAL = 'Sorry, I only work for the ops team here.';

/** A provider that counts its rounds, so "no model call" is observable. */
function countingProvider(): { provider: ModelProvider; rounds: () => number } {
  const inner = new ScriptedProvider({ rules: [{ rounds: [{ text: 'echo: {{lastUser}}' }] }] });
  let rounds = 0;
  const provider = Object.create(inner) as ModelProvider;
  provider.streamRound = (...args: Parameters<ModelProvider['streamRound']>) => {
    rounds += 1;
    return inner.streamRound(...args);
  };
  return { provider, rounds: () => rounds };
}

describe("a policy's requesters on Slack", () => {
  let fake: FakeSlack;
  let h: Harness;
  let model: ReturnType<typeof countingProvider>;

  beforeAll(async () => {
    fake = await FakeSlack.start();
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'cs-policy-')), 'policy.yaml');
    writeFileSync(
      file,
      [
        'version: 1',
        `workspaces: [slack:${fake.team}]`,
        'requesters:',
        `  allow: [{ workspaces: [slack:${fake.team}] }]`,
        '  deny: [{ guest: true }]',
        `  refusal: "${REFUSAL}"`,
      ].join('\n'),
    );
    model = countingProvider();
    h = await startHarness({
      provider: model.provider,
      env: {
        SLACK_BOT_TOKEN: fake.botToken,
        SLACK_APP_TOKEN: fake.appToken,
        SLACK_API_URL: fake.apiUrl,
        SLACK_STREAMING: 'off',
        POLICY_FILE: file,
      },
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  const turnsOf = async (user: string) =>
    (
      await h.app.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM countersign.work_items WHERE item->'requester'->>'userId' = $1`,
        [user],
      )
    ).rows[0]!.n;

  it('answers a member of the home workspace', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'hello' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    await waitFor(
      async () => (fake.textIn(CHANNEL, mention.ts).includes('echo: hello') ? true : undefined),
      20_000,
      'the answer',
    );
  });

  it('refuses a Slack Connect user of another org privately, with no turn and no model call', async () => {
    const before = model.rounds();
    const guest = 'U0GUEST001';
    // In a shared channel the event names the org that issued the user id.
    const mention = { ...appMention({ user: guest, channel: CHANNEL, text: 'run something' }), user_team: 'T0OTHER01' };
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    const notice = await waitFor(
      async () => fake.messages.find((m) => m.ephemeralFor === guest),
      10_000,
      'the private refusal',
    );
    expect(notice.text).toBe(REFUSAL);
    expect(await turnsOf(guest)).toBe(0);
    expect(model.rounds()).toBe(before);
    // Nothing but the guest's own message is in the thread for everyone to see.
    expect(fake.textIn(CHANNEL, mention.ts).filter((t) => !t.includes('run something'))).toEqual([]);
  });
});

describe('a policy whose approvers are a Slack user group', () => {
  let fake: FakeSlack;
  let h: Harness;
  const BOB = 'U0BOB00001';
  const runs: string[] = [];

  beforeAll(async () => {
    fake = await FakeSlack.start();
    const oncall = fake.world.addUserGroup(fake.team, 'oncall', [BOB]);
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'cs-policy-')), 'policy.yaml');
    writeFileSync(file, `version: 1\napprovers: [slack-usergroup:${oncall}]\n`);
    h = await startHarness({
      tools: [countingTool('restart_service', runs, { risk: 'high', result: 'restarted' })],
      script: {
        rules: [
          {
            rounds: [
              { toolCalls: [{ name: 'restart_service', args: { service: 'api' } }] },
              { text: 'Result: {{lastToolResult}}' },
            ],
          },
        ],
      },
      env: {
        SLACK_BOT_TOKEN: fake.botToken,
        SLACK_APP_TOKEN: fake.appToken,
        SLACK_API_URL: fake.apiUrl,
        SLACK_STREAMING: 'off',
        POLICY_FILE: file,
      },
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it("refuses the requester's own Approve; a member of the group countersigns, once", async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'restart the api' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    const card = await waitFor(
      async () =>
        fake.messages.find((m) => m.thread_ts === mention.ts && JSON.stringify(m.blocks).includes('"Approve"')),
      20_000,
      'the card',
    );
    // The card names who may decide.
    expect(card.text).toContain('not the requester');
    const approve = (
      card.blocks.find((b) => (b as { type: string }).type === 'actions') as {
        elements: Array<{ value: string; action_id: string; text: { text: string } }>;
      }
    ).elements.find((e) => e.text.text === 'Approve')!;
    const click = (user: string) =>
      fake.deliver(
        interactiveEnvelope(
          blockAction(fake.team, {
            user,
            channel: CHANNEL,
            messageTs: card.ts,
            threadTs: mention.ts,
            value: approve.value,
            actionId: approve.action_id,
          }),
        ),
      );
    await click(ALICE);
    const own = await waitFor(
      async () => fake.messages.find((m) => m.ephemeralFor === ALICE),
      10_000,
      "the requester's private refusal",
    );
    expect(own.text).toMatch(/second signature/);
    expect(runs).toEqual([]);
    await click(BOB);
    await waitFor(
      async () => (fake.textIn(CHANNEL, mention.ts).includes('Result: restarted api') ? true : undefined),
      20_000,
      'the result',
    );
    expect(runs).toEqual(['api']);
  });
});

describe('a card that needs a countersignature goes to the people who can give it', () => {
  const BOB = 'U0BOB00001';
  const APPROVALS = 'C0APPROVE1';

  async function start(env: Record<string, string>) {
    const fake = await FakeSlack.start();
    const runs: string[] = [];
    const h = await startHarness({
      tools: [countingTool('restart_service', runs, { risk: 'high', result: 'restarted' })],
      script: {
        rules: [
          {
            rounds: [
              { toolCalls: [{ name: 'restart_service', args: { service: 'api' } }] },
              { text: 'Result: {{lastToolResult}}' },
            ],
          },
        ],
      },
      env: {
        SLACK_BOT_TOKEN: fake.botToken,
        SLACK_APP_TOKEN: fake.appToken,
        SLACK_API_URL: fake.apiUrl,
        SLACK_STREAMING: 'off',
        APPROVERS: `slack:${BOB}`,
        ...env,
      },
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
    return { fake, h, runs };
  }

  /** Alice asks; returns her card and the copy in `channel`, once both are there. */
  async function ask(fake: FakeSlack, copyIn: (channel: string) => boolean) {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'restart the api' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    const hasButtons = (m: { blocks: unknown[] }) => JSON.stringify(m.blocks).includes('"Approve"');
    const card = await waitFor(
      async () => fake.messages.find((m) => m.thread_ts === mention.ts && hasButtons(m)),
      20_000,
      'the card',
    );
    const copy = await waitFor(
      async () => fake.messages.find((m) => copyIn(m.channel) && hasButtons(m)),
      20_000,
      'the copy',
    );
    return { mention, card, copy };
  }

  async function approveOn(fake: FakeSlack, message: { ts: string; channel: string; blocks: unknown[] }, user: string) {
    const approve = (
      message.blocks.find(
        (b) => (b as { type: string }).type === 'actions' && JSON.stringify(b).includes('"Approve"'),
      ) as {
        elements: Array<{ value: string; action_id: string; text: { text: string } }>;
      }
    ).elements.find((e) => e.text.text === 'Approve')!;
    await fake.deliver(
      interactiveEnvelope(
        blockAction(fake.team, {
          user,
          channel: message.channel,
          messageTs: message.ts,
          value: approve.value,
          actionId: approve.action_id,
        }),
      ),
    );
  }

  it('by DM to each approver, linking back; a decision on the copy updates both', async () => {
    const { fake, h, runs } = await start({});
    try {
      const { mention, card, copy } = await ask(fake, (c) => c.startsWith('D'));
      expect(card.text).toContain(`Sent by direct message to slack:${BOB} for a countersignature.`);
      expect(copy.text).toMatch(
        // The card is a thread reply: its permalink opens the thread (mrkdwn escapes the URL's &).
        /Asked by .* — <https:\/\/fake-slack\.invalid\/archives\/C0OPS00001\/p\d+\?thread_ts=\d+\.\d+&amp;cid=C0OPS00001\|open the conversation>/,
      );
      // One DM opened: Bob's (Alice asked; a requester never gets a copy of their own card).
      expect(fake.calls.filter((c) => c.method === 'conversations.open' && c.status === 200)).toHaveLength(1);
      expect(fake.world.channel(copy.channel)?.user).toBe(BOB);
      await approveOn(fake, copy, BOB);
      await waitFor(
        async () => (fake.textIn(CHANNEL, mention.ts).includes('Result: restarted api') ? true : undefined),
        20_000,
        'the result in the requester’s thread',
      );
      expect(runs).toEqual(['api']);
      // Both the card and its copy say it was decided, and neither has buttons left.
      await waitFor(
        async () =>
          [card, copy].every((m) => {
            const now = fake.messages.find((x) => x.channel === m.channel && x.ts === m.ts)!;
            return !JSON.stringify(now.blocks).includes('"Approve"') && now.text.includes('approved by');
          })
            ? true
            : undefined,
        10_000,
        'both cards to show the decision',
      );
    } finally {
      await h.stop();
      await fake.close();
    }
  });

  it('to APPROVAL_CHANNEL when one is set for the platform', async () => {
    const { fake, h, runs } = await start({ APPROVAL_CHANNEL: `slack:${APPROVALS}` });
    try {
      const { mention, card, copy } = await ask(fake, (c) => c === APPROVALS);
      expect(card.text).toContain('Sent to the approvals channel for a countersignature.');
      expect(fake.calls.some((c) => c.method === 'conversations.open')).toBe(false);
      await approveOn(fake, copy, BOB);
      await waitFor(
        async () => (fake.textIn(CHANNEL, mention.ts).includes('Result: restarted api') ? true : undefined),
        20_000,
        'the result',
      );
      expect(runs).toEqual(['api']);
    } finally {
      await h.stop();
      await fake.close();
    }
  });
});
