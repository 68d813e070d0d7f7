import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import { buttonInteraction, dmMessage } from '../../fixtures/discord/payloads.ts';
import { slowTool } from '../../helpers/tools.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

const runs: string[] = [];
const slowCheck = slowTool('slow_check', runs);

describe('steering a running turn on Discord (the default mode in DMs and threads)', () => {
  let fake: FakeDiscord;
  let db: TestDatabase;
  let h: Harness;

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    db = await createTestDatabase();
    h = await startHarness({
      db,
      tools: [slowCheck],
      script: {
        rules: [
          {
            match: 'check the api',
            rounds: [
              { toolCalls: [{ name: 'slow_check', args: { service: 'api' } }] },
              { text: 'checked: {{lastToolResult}}' },
            ],
          },
          { rounds: [{ text: 'answer to: {{lastUser}}' }] },
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

  it('a DM sent while a tool runs joins the turn: one answer, the tool run once', async () => {
    fake.userSays(dmMessage(fake.scene, { text: 'check the api' }));
    await waitFor(async () => (runs.includes('api') ? true : undefined), 30_000, 'the tool to start');
    fake.userSays(dmMessage(fake.scene, { text: 'and say hi' }));
    await fake.until(
      () =>
        fake.botTextIn(fake.scene.dmChannelId).some((t) => t.includes('answer to: and say hi')) ? true : undefined,
      'the steered answer',
      45_000,
    );
    expect(runs).toEqual(['api']);
    // One reply: the steered message got no turn (and no placeholder) of its own.
    expect(fake.botTextIn(fake.scene.dmChannelId)).toHaveLength(1);
    const { rows } = await h.app.pool.query(
      `SELECT count(*)::int AS n FROM countersign.work_items WHERE result ? 'takenInto'`,
    );
    expect(rows[0]?.n).toBe(1);
  });

  it('keeps 👍/👎 on the answer; a vote is recorded with the turn', async () => {
    const answer = fake
      .messagesIn(fake.scene.dmChannelId)
      .find((x) => String(x.message.content).includes('answer to: and say hi'))!;
    const buttons = (
      answer.message.components as Array<{ components: Array<{ label: string; custom_id: string }> }>
    ).flatMap((r) => r.components);
    const down = buttons.find((b) => b.label === '👎')!;
    const voted = fake.interact(
      buttonInteraction(fake.scene, { customId: down.custom_id, message: answer.message, inDm: true }),
    );
    await fake.until(
      () => {
        const id = voted.originalMessageId;
        const reply = id ? fake.message(id) : undefined;
        return reply && /recorded with this answer/.test(String(reply.message.content)) ? true : undefined;
      },
      'the acknowledgement',
      45_000,
    );
    const { rows } = await h.app.pool.query(`SELECT vote, user_id FROM countersign.turn_feedback`);
    expect(rows).toEqual([{ vote: 'down', user_id: fake.scene.human.id }]);
  });
});
