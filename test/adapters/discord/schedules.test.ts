import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSchedule } from '../../../src/schedules/manage.ts';
import { findSchedule } from '../../../src/schedules/store.ts';
import { recordScheduleEvent } from '../../../src/wiring/schedules.ts';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import { buttonInteraction, slashCommandInteraction } from '../../fixtures/discord/payloads.ts';
import { startHarness, type Harness } from '../../helpers/harness.ts';

type Row = { components: Array<{ label: string; custom_id: string }> };

describe('/countersign schedules on Discord', () => {
  let fake: FakeDiscord;
  let h: Harness;

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    h = await startHarness({
      env: {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.scene.applicationId,
        DISCORD_GUILD_ID: fake.scene.guildId,
        DISCORD_API_URL: fake.restUrl,
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  const answerTo = (interaction: { originalMessageId?: string }, pattern: RegExp, what: string) =>
    fake.until(
      () => {
        const id = interaction.originalMessageId;
        const message = id ? fake.message(id) : undefined;
        return message && pattern.test(String(message.message.content)) ? message : undefined;
      },
      what,
      45_000,
    );

  it('lists the owner’s schedules privately, and Pause pauses', async () => {
    const made = await createSchedule(
      h.app.pool,
      { maxPerPerson: 20, minIntervalSeconds: 300 },
      recordScheduleEvent(h.app.pool),
      {
        id: randomUUID(),
        owner: { platform: 'discord', userId: fake.scene.human.id as string, workspace: '@me' },
        place: { platform: 'discord', channel: fake.scene.dmChannelId, workspace: '@me' },
        conversationId: `discord:${fake.scene.dmChannelId}`,
        when: 'every 2h',
        task: 'check the error log',
        background: true,
        catchUp: 'none',
      },
      new Date(),
    );
    if (!made.ok) throw new Error(made.message);
    const list = fake.interact(
      slashCommandInteraction(fake.scene, {
        name: 'countersign',
        options: [{ name: 'schedules', type: 1 }],
        inDm: true,
      }),
    );
    const shown = await answerTo(list, /check the error log/, 'the schedules list');
    expect(shown.ephemeral).toBe(true);
    const buttons = (shown.message.components as Row[]).flatMap((r) => r.components);
    expect(buttons.map((b) => b.label)).toEqual(['Pause 1', 'History 1', 'Delete 1']);
    const paused = fake.interact(
      buttonInteraction(fake.scene, { customId: buttons[0]!.custom_id, message: shown.message, inDm: true }),
    );
    await answerTo(paused, /is paused/, 'the pause');
    expect(await findSchedule(h.app.pool, made.schedule.id)).toMatchObject({ status: 'paused' });
    const history = fake.interact(
      buttonInteraction(fake.scene, { customId: buttons[1]!.custom_id, message: shown.message, inDm: true }),
    );
    await answerTo(history, /has not run yet/, 'the history');
  });

  it('keeps ten schedules within Discord’s five rows of buttons', async () => {
    for (let i = 0; i < 10; i++) {
      const made = await createSchedule(
        h.app.pool,
        { maxPerPerson: 20, minIntervalSeconds: 300 },
        recordScheduleEvent(h.app.pool),
        {
          id: randomUUID(),
          owner: { platform: 'discord', userId: fake.scene.human.id as string, workspace: '@me' },
          place: { platform: 'discord', channel: fake.scene.dmChannelId, workspace: '@me' },
          conversationId: `discord:${fake.scene.dmChannelId}`,
          when: 'every 2h',
          task: `task number ${i}`,
          background: false,
          catchUp: 'latest',
        },
        new Date(),
      );
      if (!made.ok) throw new Error(made.message);
    }
    const list = fake.interact(
      slashCommandInteraction(fake.scene, {
        name: 'countersign',
        options: [{ name: 'schedules', type: 1 }],
        inDm: true,
      }),
    );
    const shown = await answerTo(list, /task number 9/, 'the schedules list');
    const rows = shown.message.components as Row[];
    expect(rows.length).toBeLessThanOrEqual(5);
    expect(rows.flatMap((r) => r.components)).toHaveLength(24);
    expect(String(shown.message.content)).toContain('Buttons for the first 8');
  });
});
