/**
 * A card posted by a scheduled run, which nobody is watching, mentions its owner on Discord and lets
 * only that mention through allowed_mentions (docs/schedules.md); a live turn's card pings nobody.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import type { Json } from '../../fixtures/discord/objects.ts';
import { guildMessageMentioningBot } from '../../fixtures/discord/payloads.ts';
import { startHarness, type Harness } from '../../helpers/harness.ts';
import { defineTool } from '../../../src/agent/tools/tool.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';
import { createSchedule } from '../../../src/schedules/manage.ts';
import { tick } from '../../../src/schedules/scheduler.ts';
import { recordScheduleEvent } from '../../../src/wiring/schedules.ts';

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

type Button = { label: string };
const hasApprove = (message: Json) =>
  ((message.components as Json[] | undefined) ?? []).some((row) =>
    ((row.components as Button[] | undefined) ?? []).some((b) => b.label === 'Approve'),
  );

describe('the card of a scheduled run on Discord', () => {
  let fake: FakeDiscord;
  let h: Harness;

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    h = await startHarness({
      script,
      env: {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.scene.applicationId,
        DISCORD_GUILD_ID: fake.scene.guildId,
        DISCORD_API_URL: fake.restUrl,
      },
    });
    h.app.tools.add(deployTool);
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('pings the owner alone; a live turn’s card pings nobody', async () => {
    const owner = fake.scene.human.id as string;
    const since = fake.requests.length;
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'deploy api now' }));
    const started = await fake.waitForRequest(
      { route: 'POST /channels/:channel_id/messages/:message_id/threads', since },
      45_000,
    );
    const liveThread = (started.response as { id: string }).id;
    const live = await fake.until(
      () => fake.messagesIn(liveThread).find((m) => hasApprove(m.message)),
      'the live card',
      45_000,
    );
    expect(live.pings.users).toEqual([]);

    const channel = fake.scene.channelId;
    const made = await createSchedule(
      h.app.pool,
      { maxPerPerson: 20, minIntervalSeconds: 300 },
      recordScheduleEvent(h.app.pool),
      {
        id: randomUUID(),
        owner: { platform: 'discord', userId: owner, workspace: fake.scene.guildId },
        place: { platform: 'discord', channel, workspace: fake.scene.guildId },
        conversationId: `discord:${channel}`,
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
        mayUse: (person, place) => h.app.approvals.mayUse(person, place),
        tell: async () => undefined,
        record: recordScheduleEvent(h.app.pool),
      },
      new Date('2030-01-01T01:00:10Z'),
    );
    const card = await fake.until(
      () => fake.messagesIn(channel).find((m) => hasApprove(m.message)),
      'the scheduled run’s card',
      45_000,
    );
    expect(card.pings).toMatchObject({ everyone: false, users: [owner], roles: [] });
    expect(String(card.message.content).startsWith(`<@${owner}>`)).toBe(true);
  });
});
