/**
 * A card posted by a scheduled run, which nobody is watching, @mentions its owner on Slack so they
 * are notified (docs/schedules.md); a card of a live turn notifies nobody.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { appMention, eventCallback, eventsApiEnvelope } from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { defineTool } from '../../../src/agent/tools/tool.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';
import { createSchedule } from '../../../src/schedules/manage.ts';
import { tick } from '../../../src/schedules/scheduler.ts';
import { recentRuns } from '../../../src/schedules/store.ts';
import { recordScheduleEvent } from '../../../src/wiring/schedules.ts';

const CHANNEL = 'C0OPS00001';
const ALICE = 'U0ALICE001';

const deployTool = defineTool({
  name: 'deploy_service',
  description: 'Deploys a service to production.',
  version: '1',
  input: z.object({ service: z.string() }),
  approval: 'always',
  risk: 'medium',
  idempotent: false,
  async execute({ service }) {
    return `deployed ${service}`;
  },
});

const script: Script = {
  rules: [
    {
      match: 'deploy',
      rounds: [{ toolCalls: [{ name: 'deploy_service', args: { service: 'api' } }] }, { text: 'done' }],
    },
  ],
};

describe('the card of a scheduled run on Slack', () => {
  let fake: FakeSlack;
  let h: Harness;

  beforeAll(async () => {
    fake = await FakeSlack.start();
    h = await startHarness({ script, env: fake.env({ SLACK_STREAMING: 'off' }) });
    h.app.tools.add(deployTool);
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  const cardIn = (thread: string) =>
    waitFor(
      async () =>
        fake.messages.find((m) => m.thread_ts === thread && JSON.stringify(m.blocks ?? []).includes('"Approve"')),
      20_000,
      'the card',
    );

  it('mentions the owner, who is notified; a live turn’s card notifies nobody', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'deploy api now' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    const live = await cardIn(mention.ts);
    expect(fake.world.notified(live)).toEqual([]);

    const thread = '1700000000.000200';
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
        task: 'deploy api',
        background: false,
        catchUp: 'latest',
      },
      new Date('2030-01-01T00:00:00Z'),
    );
    if (!made.ok) throw new Error(made.message);
    await tick(
      {
        pool: h.app.pool,
        log: h.app.log,
        mayUse: (owner, place) => h.app.approvals.mayUse(owner, place),
        tell: async () => undefined,
        record: recordScheduleEvent(h.app.pool),
      },
      new Date('2030-01-01T01:00:10Z'),
    );
    expect(await recentRuns(h.app.pool, made.schedule.id)).toHaveLength(1);
    const card = await cardIn(thread);
    expect(fake.world.notified(card)).toEqual([ALICE]);
    expect(card.text.startsWith(`<@${ALICE}>`)).toBe(true);
  });
});
