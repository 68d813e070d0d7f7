import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSchedule } from '../../../src/schedules/manage.ts';
import { findSchedule } from '../../../src/schedules/store.ts';
import { recordScheduleEvent } from '../../../src/wiring/schedules.ts';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { blockAction, interactiveEnvelope, slashCommand, slashCommandEnvelope } from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';

const CHANNEL = 'C0OPS00001';
const ALICE = 'U0ALICE001';
const MALLORY = 'U0MALLORY1';

type Button = { value: string; action_id: string; text: { text: string } };
const buttonsOf = (blocks: unknown[]): Button[] =>
  blocks.flatMap((b) => {
    const block = b as { type: string; elements?: Button[] };
    return block.type === 'actions' ? (block.elements ?? []) : [];
  });

describe('/countersign schedules on Slack', () => {
  let fake: FakeSlack;
  let h: Harness;

  beforeAll(async () => {
    fake = await FakeSlack.start();
    h = await startHarness({ env: fake.env({ SLACK_STREAMING: 'off' }) });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  const list = async (user: string) => {
    const ack = await fake.deliver(
      slashCommandEnvelope(
        slashCommand(fake.team, { command: '/countersign', text: 'schedules', user, channel: CHANNEL }),
      ),
    );
    return ack.payload as { response_type: string; text: string; blocks: unknown[] };
  };
  const click = (user: string, button: Button) =>
    fake.deliver(
      interactiveEnvelope(
        blockAction(fake.team, {
          user,
          channel: CHANNEL,
          messageTs: '1700000000.000100',
          value: button.value,
          actionId: button.action_id,
        }),
      ),
    );

  it('lists the owner’s schedules privately with Pause and Delete, and refuses a stranger’s click', async () => {
    const made = await createSchedule(
      h.app.pool,
      { maxPerPerson: 20, minIntervalSeconds: 300 },
      recordScheduleEvent(h.app.pool),
      {
        id: randomUUID(),
        owner: { platform: 'slack', userId: ALICE, workspace: fake.team },
        place: { platform: 'slack', channel: CHANNEL, workspace: fake.team },
        conversationId: `slack:${CHANNEL}`,
        when: '0 9 * * 1-5 Europe/Berlin',
        task: 'summarise incidents',
        background: false,
        catchUp: 'latest',
      },
      new Date(),
    );
    if (!made.ok) throw new Error(made.message);
    const answer = await list(ALICE);
    expect(answer.response_type).toBe('ephemeral');
    expect(JSON.stringify(answer.blocks)).toContain('summarise incidents');
    const [pause, remove] = buttonsOf(answer.blocks);
    expect(pause?.text.text).toBe('Pause');
    expect(remove?.text.text).toBe('Delete');

    // Mallory sees none of Alice's schedules, and pressing her button is refused privately.
    expect(buttonsOf((await list(MALLORY)).blocks)).toEqual([]);
    await click(MALLORY, remove!);
    await waitFor(
      async () => fake.messages.find((m) => m.ephemeralFor === MALLORY && /Only .* or an approver/.test(m.text)),
      10_000,
      'the refusal',
    );
    expect(await findSchedule(h.app.pool, made.schedule.id)).toMatchObject({ status: 'active' });

    await click(ALICE, pause!);
    await waitFor(
      async () => fake.messages.find((m) => m.ephemeralFor === ALICE && /is paused/.test(m.text)),
      10_000,
      'the pause',
    );
    expect(await findSchedule(h.app.pool, made.schedule.id)).toMatchObject({ status: 'paused' });
    expect(buttonsOf((await list(ALICE)).blocks)[0]?.text.text).toBe('Resume');
  });
});
