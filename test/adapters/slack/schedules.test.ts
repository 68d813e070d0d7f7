import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSchedule } from '../../../src/schedules/manage.ts';
import { findSchedule, recentRuns } from '../../../src/schedules/store.ts';
import { tick } from '../../../src/schedules/scheduler.ts';
import { schedulesCommand } from '../../../src/schedules/cli.ts';
import { createWebClient, SlackOutbound } from '../../../src/adapters/slack/outbound.ts';
import { RateBuckets } from '../../../src/reply/rate-bucket.ts';
import type { Requester } from '../../../src/core/person.ts';
import type { ReplyTarget } from '../../../src/core/reply-target.ts';
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
    const [pause, history, remove] = buttonsOf(answer.blocks);
    expect(pause?.text.text).toBe('Pause');
    expect(history?.text.text).toBe('History');
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

  it('shows the last runs with their outcome and a link to the thread, to the owner alone', async () => {
    const thread = '1700000000.000300';
    const made = await createSchedule(
      h.app.pool,
      { maxPerPerson: 20, minIntervalSeconds: 300 },
      recordScheduleEvent(h.app.pool),
      {
        id: randomUUID(),
        owner: { platform: 'slack', userId: ALICE, workspace: fake.team },
        place: { platform: 'slack', channel: CHANNEL, thread, workspace: fake.team },
        conversationId: `slack:${fake.team}:${CHANNEL}:${thread}`,
        when: 'every 1h',
        task: 'say hello',
        background: false,
        catchUp: 'latest',
      },
      new Date('2031-01-01T00:00:00Z'),
    );
    if (!made.ok) throw new Error(made.message);
    // The worker's own Slack client, as the running app's scheduler links a run's answer.
    const outbound = new SlackOutbound(createWebClient(fake.botToken, fake.apiUrl), new RateBuckets(h.app.pool), 50);
    const deps = {
      pool: h.app.pool,
      log: h.app.log,
      mayUse: (owner: Requester, place: ReplyTarget) => h.app.approvals.mayUse(owner, place),
      tell: async () => undefined,
      record: recordScheduleEvent(h.app.pool),
      linkTo: (reply: ReplyTarget) => outbound.linkTo(reply, reply.messageId!),
    };
    await tick(deps, new Date('2031-01-01T01:00:10Z'));
    const [run] = await recentRuns(h.app.pool, made.schedule.id);
    await h.settled(run!.work_item_id!);
    await tick(deps, new Date('2031-01-01T01:30:00Z'));
    const [settled] = await recentRuns(h.app.pool, made.schedule.id);
    expect(settled).toMatchObject({ outcome: 'done' });
    expect(settled!.link).toMatch(
      new RegExp(`^https://fake-slack\\.invalid/archives/${CHANNEL}/p\\d+\\?thread_ts=${thread}&cid=${CHANNEL}$`),
    );

    const entry = (blocks: unknown[]) =>
      buttonsOf(blocks).find((b) => b.text.text === 'History' && b.value.endsWith(made.schedule.id));
    const history = entry((await list(ALICE)).blocks);
    expect(history).toBeDefined();
    await click(MALLORY, history!);
    await waitFor(
      async () => fake.messages.find((m) => m.ephemeralFor === MALLORY && /see the history of/.test(m.text)),
      10_000,
      'the refusal',
    );
    await click(ALICE, history!);
    const shown = await waitFor(
      async () => fake.messages.find((m) => m.ephemeralFor === ALICE && /its last 1 run/.test(m.text)),
      10_000,
      'the history',
    );
    expect(shown.text).toContain('— done —');
    // mrkdwn escapes & in a link's URL; Slack reads it back as &.
    expect(shown.text).toContain(`<${settled!.link!.replaceAll('&', '&amp;')}|open the thread>`);

    // The shell's history shows the same link.
    const out: string[] = [];
    const code = await schedulesCommand(
      h.app.pool,
      recordScheduleEvent(h.app.pool),
      { platform: 'cli', userId: 'ops' },
      ['history', made.schedule.id.slice(0, 8)],
      { out: (line) => out.push(line), err: (line) => out.push(line) },
    );
    expect(code).toBe(0);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/^2031-01-01T01:00:00\.000Z {2}done {2}/);
    expect(out[0]!.endsWith(settled!.link!)).toBe(true);
  });
});
