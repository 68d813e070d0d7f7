import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import {
  appMention,
  blockAction,
  eventCallback,
  eventsApiEnvelope,
  interactiveEnvelope,
  slashCommand,
  slashCommandEnvelope,
} from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { countingTool } from '../../helpers/tools.ts';

const CHANNEL = 'C0OPS00001';
const ALICE = 'U0ALICE001';
const BOB = 'U0BOB00001';

type Button = { value: string; action_id: string; text: { text: string } };
const buttonsOf = (blocks: unknown[]): Button[] =>
  blocks.flatMap((b) => {
    const block = b as { type: string; elements?: Button[]; accessory?: Button };
    return [...(block.type === 'actions' ? (block.elements ?? []) : []), ...(block.accessory ? [block.accessory] : [])];
  });

describe('"Always allow here" and /countersign grants on Slack', () => {
  let fake: FakeSlack;
  let h: Harness;
  const runs: string[] = [];

  beforeAll(async () => {
    fake = await FakeSlack.start();
    h = await startHarness({
      tools: [countingTool('restart_service', runs, { risk: 'medium', result: 'restarted' })],
      script: {
        rules: [
          {
            rounds: [
              { toolCalls: [{ name: 'restart_service', args: { service: 'prod-api' } }] },
              { text: 'Done: {{lastToolResult}}' },
            ],
          },
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

  const mention = async (user: string) => {
    const event = appMention({ user, channel: CHANNEL, text: 'restart prod' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, event)));
    return event;
  };
  const click = (user: string, messageTs: string, threadTs: string | undefined, button: Button) =>
    fake.deliver(
      interactiveEnvelope(
        blockAction(fake.team, {
          user,
          channel: CHANNEL,
          messageTs,
          ...(threadTs ? { threadTs } : {}),
          value: button.value,
          actionId: button.action_id,
        }),
      ),
    );
  const answered = (ts: string) =>
    waitFor(
      async () => (fake.textIn(CHANNEL, ts).some((t) => t.includes('Done: restarted')) ? true : undefined),
      20_000,
      'the answer',
    );

  it('grants from the card, runs the same call without one, lists and revokes the grant', async () => {
    const first = await mention(ALICE);
    const card = await waitFor(
      async () =>
        fake.messages.find((m) => m.thread_ts === first.ts && JSON.stringify(m.blocks).includes('Always allow here')),
      20_000,
      'the card',
    );
    // The card says what the grant covers before anyone clicks.
    expect(card.text).toContain('Always allow here: later `restart_service` calls with exactly these arguments');
    const always = buttonsOf(card.blocks).find((b) => b.text.text === 'Always allow here')!;
    await click(ALICE, card.ts, first.ts, always);
    await answered(first.ts);
    expect(runs).toEqual(['prod-api']);

    // Bob asks for the same call in the same channel: it runs at once, without a card.
    const second = await mention(BOB);
    await answered(second.ts);
    expect(runs).toEqual(['prod-api', 'prod-api']);
    expect(
      fake.messages.some((m) => m.thread_ts === second.ts && JSON.stringify(m.blocks ?? []).includes('Approve')),
    ).toBe(false);

    // The list, privately, with a Revoke button.
    const ack = await fake.deliver(
      slashCommandEnvelope(
        slashCommand(fake.team, { command: '/countersign', text: 'grants', user: BOB, channel: CHANNEL }),
      ),
    );
    const list = ack.payload as { response_type: string; text: string; blocks: unknown[] };
    expect(list.response_type).toBe('ephemeral');
    expect(JSON.stringify(list.blocks)).toContain('restart_service');
    expect(JSON.stringify(list.blocks)).toContain('used 1 time');
    const revoke = buttonsOf(list.blocks).find((b) => b.text.text === 'Revoke')!;
    expect(revoke.value).toMatch(/^revoke-grant:[0-9a-f-]{36}$/);

    // Bob neither made the grant nor is an approver: refused, privately.
    await click(BOB, card.ts, undefined, revoke);
    await waitFor(
      async () => fake.messages.find((m) => m.ephemeralFor === BOB && /Only whoever made this grant/.test(m.text)),
      10_000,
      'the refusal',
    );
    await click(ALICE, card.ts, undefined, revoke);
    await waitFor(
      async () => fake.messages.find((m) => m.ephemeralFor === ALICE && /Revoked grant/.test(m.text)),
      10_000,
      'the revocation',
    );

    // Revoked: the same call asks again.
    const third = await mention(BOB);
    await waitFor(
      async () =>
        fake.messages.find(
          (m) => m.thread_ts === third.ts && JSON.stringify(m.blocks ?? []).includes('Always allow here'),
        ),
      20_000,
      'a new card',
    );
    expect(runs).toEqual(['prod-api', 'prod-api']);
  });

  it('answers /countersign without "grants" with help, and an empty list plainly', async () => {
    const help = await fake.deliver(
      slashCommandEnvelope(
        slashCommand(fake.team, { command: '/countersign', text: '', user: ALICE, channel: 'C0EMPTY001' }),
      ),
    );
    expect((help.payload as { text: string }).text).toContain('/countersign grants');
    // The help says what a message sent while the bot works does here.
    expect((help.payload as { text: string }).text).toContain('(mode `steer`');
    const empty = await fake.deliver(
      slashCommandEnvelope(
        slashCommand(fake.team, { command: '/countersign', text: 'grants', user: ALICE, channel: 'C0EMPTY001' }),
      ),
    );
    expect((empty.payload as { text: string }).text).toMatch(/^No standing grants apply here/);
  });
});
