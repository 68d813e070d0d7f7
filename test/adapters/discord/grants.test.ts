import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import { buttonInteraction, dmMessage, slashCommandInteraction } from '../../fixtures/discord/payloads.ts';
import { startHarness, type Harness } from '../../helpers/harness.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { countingTool } from '../../helpers/tools.ts';

type Row = { components: Array<{ label: string; custom_id: string }> };

describe('"Always allow here" and /countersign grants on Discord', () => {
  let fake: FakeDiscord;
  let db: TestDatabase;
  let h: Harness;
  const runs: string[] = [];

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    db = await createTestDatabase();
    h = await startHarness({
      db,
      tools: [countingTool('restart_service', runs, { risk: 'medium', result: 'restarted' })],
      script: {
        rules: [
          {
            rounds: [
              { toolCalls: [{ name: 'restart_service', args: { service: 'api' } }] },
              { text: 'Result: {{lastToolResult}} #{{lastUser}}' },
            ],
          },
        ],
      },
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
    await db.drop();
  });

  const dm = {
    say: (text: string) => fake.userSays(dmMessage(fake.scene, { text })),
    answered: (text: string) =>
      fake
        .until(
          () => (fake.botTextIn(fake.scene.dmChannelId).includes(`Result: restarted api #${text}`) ? true : undefined),
          `the answer to "${text}"`,
          45_000,
        )
        .catch((error: unknown) => {
          throw new Error(`${(error as Error).message}; DM: ${JSON.stringify(fake.botTextIn(fake.scene.dmChannelId))}`);
        }),
    cardWith: (label: string, since: number) =>
      fake.until(
        () =>
          fake
            .messagesIn(fake.scene.dmChannelId)
            .slice(since)
            .find((m) => JSON.stringify(m.message.components ?? []).includes(`"label":"${label}"`)),
        'the approval card',
        45_000,
      ),
  };

  it('grants from the card, runs the same call without one, lists and revokes the grant', async () => {
    dm.say('first');
    const card = await dm.cardWith('Always allow here', 0);
    // The card says what the grant would cover before anyone clicks.
    expect(JSON.stringify(card.message.embeds)).toContain('Always allow here: later `restart_service` calls');
    const always = (card.message.components as Row[])
      .flatMap((r) => r.components)
      .find((b) => b.label === 'Always allow here')!;
    fake.interact(buttonInteraction(fake.scene, { customId: always.custom_id, message: card.message, inDm: true }));
    await dm.answered('first');
    expect(runs).toEqual(['api']);

    const before = fake.messagesIn(fake.scene.dmChannelId).length;
    dm.say('second');
    await dm.answered('second');
    expect(runs).toEqual(['api', 'api']);
    const cards = fake
      .messagesIn(fake.scene.dmChannelId)
      .slice(before)
      .filter((m) => JSON.stringify(m.message.components ?? []).includes('"label":"Approve"'));
    expect(cards).toEqual([]);

    const list = fake.interact(
      slashCommandInteraction(fake.scene, { name: 'countersign', options: [{ name: 'grants', type: 1 }], inDm: true }),
    );
    const shown = await fake.until(
      () => {
        const id = list.originalMessageId;
        const message = id ? fake.message(id) : undefined;
        return message && String(message.message.content).includes('restart_service') ? message : undefined;
      },
      'the grants list',
      45_000,
    );
    expect(shown.ephemeral).toBe(true);
    const revoke = (shown.message.components as Row[])
      .flatMap((r) => r.components)
      .find((b) => b.label === 'Revoke 1')!;
    expect(revoke.custom_id).toMatch(/^revoke-grant:[0-9a-f-]{36}$/);
    const revoked = fake.interact(
      buttonInteraction(fake.scene, { customId: revoke.custom_id, message: shown.message, inDm: true }),
    );
    await fake.until(
      () => {
        const id = revoked.originalMessageId;
        const message = id ? fake.message(id) : undefined;
        return message && /Revoked grant/.test(String(message.message.content)) ? true : undefined;
      },
      'the revocation',
      45_000,
    );

    const again = fake.messagesIn(fake.scene.dmChannelId).length;
    dm.say('third');
    await dm.cardWith('Approve', again);
    expect(runs).toEqual(['api', 'api']);
  });
});
