import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import {
  appMention,
  blockAction,
  BOT_USER,
  eventCallback,
  eventsApiEnvelope,
  interactiveEnvelope,
  slashCommand,
  slashCommandEnvelope,
} from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { countingTool } from '../../helpers/tools.ts';

const CHANNEL = 'C0OPS00001';
const ALICE_DM = 'D0ALICE001';
const ALICE = 'U0ALICE001';
const STRANGER = 'U0STRANGE1';
const REFUSAL = 'Sorry, I only work for the ops team here.';

type Button = { value: string; action_id: string; text: { text: string } };
type Listing = { response_type: string; text: string; blocks?: unknown[] };

describe('/countersign grants on Slack lists only what the viewer may see', () => {
  let fake: FakeSlack;
  let h: Harness;
  const runs: string[] = [];

  beforeAll(async () => {
    fake = await FakeSlack.start();
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'cs-grants-policy-')), 'policy.yaml');
    writeFileSync(
      file,
      ['version: 1', 'requesters:', `  allow: [slack:${ALICE}]`, `  refusal: "${REFUSAL}"`].join('\n'),
    );
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
      env: fake.env({ SLACK_STREAMING: 'off', POLICY_FILE: file }),
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
    await aliceGrantsARestartIn(CHANNEL);
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  /** Alice asks for a restart in the channel and answers its card with "Always allow here". */
  async function aliceGrantsARestartIn(channel: string) {
    const mention = appMention({ user: ALICE, channel, text: 'restart prod' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    const card = await waitFor(
      async () =>
        fake.messages.find((m) => m.thread_ts === mention.ts && JSON.stringify(m.blocks).includes('Always allow here')),
      20_000,
      'the card',
    );
    const always = (card.blocks as Array<{ type: string; elements?: Button[] }>)
      .flatMap((b) => (b.type === 'actions' ? (b.elements ?? []) : []))
      .find((b) => b.text.text === 'Always allow here')!;
    await fake.deliver(
      interactiveEnvelope(
        blockAction(fake.team, {
          user: ALICE,
          channel,
          messageTs: card.ts,
          threadTs: mention.ts,
          value: always.value,
          actionId: always.action_id,
        }),
      ),
    );
    await waitFor(
      async () => (fake.textIn(channel, mention.ts).some((t) => t.includes('Done: restarted')) ? true : undefined),
      20_000,
      'the answer',
    );
  }

  const grantsCommand = async (user: string, channel: string): Promise<Listing> =>
    (
      await fake.deliver(
        slashCommandEnvelope(slashCommand(fake.team, { command: '/countersign', text: 'grants', user, channel })),
      )
    ).payload as Listing;

  it('gives a person the policy does not serve its refusal, and no list', async () => {
    const answer = await grantsCommand(STRANGER, CHANNEL);
    expect(answer.response_type).toBe('ephemeral');
    expect(answer.text).toBe(REFUSAL);
    expect(JSON.stringify(answer)).not.toContain('restart_service');
  });

  it("lists a person's grant in their DM while they are in its channel, and not after they left it", async () => {
    const before = await grantsCommand(ALICE, ALICE_DM);
    expect(JSON.stringify(before.blocks)).toContain('restart_service');

    fake.world.leave(CHANNEL, ALICE, BOT_USER);
    const after = await grantsCommand(ALICE, ALICE_DM);
    expect(after.text).toMatch(/^No standing grants apply here/);
    expect(JSON.stringify(after)).not.toContain('restart_service');
    expect(fake.calls.some((c) => c.method === 'conversations.members')).toBe(true);
  });
});
