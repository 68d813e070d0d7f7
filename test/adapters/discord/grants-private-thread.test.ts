import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import type { Json } from '../../fixtures/discord/objects.ts';
import {
  buttonInteraction,
  dmMessage,
  guildMessageMentioningBot,
  slashCommandInteraction,
  threadMessage,
} from '../../fixtures/discord/payloads.ts';
import { snowflake } from '../../fixtures/discord/snowflake.ts';
import { startHarness, type Harness } from '../../helpers/harness.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { countingTool } from '../../helpers/tools.ts';

type Row = { components: Array<{ label: string; custom_id: string }> };

/**
 * Issue 47 (7): "Always allow here" clicked in a private thread (channel type 12) made a grant of
 * the parent channel: it covered calls there with no card, and was listed there with its
 * arguments, to people who cannot see the thread. Made through the real path: a mention in the
 * thread, the card, the click.
 */
describe('"Always allow here" in a private Discord thread', () => {
  let fake: FakeDiscord;
  let db: TestDatabase;
  let h: Harness;
  let thread: string;
  /** A second private thread of the same channel, where nothing was granted. */
  let otherThread: string;
  const runs: string[] = [];

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    thread = fake.world.createThread({ parentId: fake.scene.channelId, name: 'incident', type: 12 }).id as string;
    fake.world.joinThread(thread, fake.scene.human.id);
    otherThread = fake.world.createThread({ parentId: fake.scene.channelId, name: 'audit', type: 12 }).id as string;
    fake.world.joinThread(otherThread, fake.scene.human.id);
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
    // The bot is connected (and has the guild's threads) once it answers a DM.
    fake.userSays(dmMessage(fake.scene, { text: 'hello' }));
    await fake.until(() => (fake.botTextIn(fake.scene.dmChannelId).length ? true : undefined), 'the bot', 45_000);
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    await db.drop();
  });

  const answered = (channel: string, text: string) =>
    fake.until(
      () => (fake.botTextIn(channel).some((t) => t.includes(`Result: restarted api #${text}`)) ? true : undefined),
      `the answer to "${text}"`,
      45_000,
    );
  const cardIn = (channel: string, since: number) =>
    fake.until(
      () =>
        fake
          .messagesIn(channel)
          .slice(since)
          .find((m) => JSON.stringify(m.message.components ?? []).includes('"label":"Always allow here"')),
      'the approval card',
      45_000,
    );
  const cardsIn = (channel: string, since: number) =>
    fake
      .messagesIn(channel)
      .slice(since)
      .filter((m) => JSON.stringify(m.message.components ?? []).includes('"label":"Approve"'));
  /**
   * An interaction as Discord sends it from a thread: its `channel` is the thread itself (type 11 or
   * 12, with its parent), not the text channel the payload builders describe.
   */
  const fromThread = (payload: Json): Json => {
    const channel = fake.world.channels.get(payload.channel_id as string);
    return channel && (channel.type === 11 || channel.type === 12) ? { ...payload, channel } : payload;
  };
  const button = (message: Json, label: string) =>
    (message.components as Row[]).flatMap((r) => r.components).find((b) => b.label === label)!;

  /** `/countersign grants` run in `channelId`; the private answer's text. */
  async function listGrants(channelId: string): Promise<string> {
    const list = fake.interact(
      fromThread(
        slashCommandInteraction(fake.scene, { name: 'countersign', options: [{ name: 'grants', type: 1 }], channelId }),
      ),
    );
    const shown = await fake.until(
      () => {
        const id = list.originalMessageId;
        const message = id ? fake.message(id) : undefined;
        const loading = message ? ((message.message.flags as number) & 128) !== 0 : true;
        return message && !loading && String(message.message.content) ? message : undefined;
      },
      'the grants answer',
      45_000,
    );
    expect(shown.ephemeral).toBe(true);
    return String(shown.message.content);
  }

  it('applies and is listed only inside the thread', async () => {
    fake.userSays(threadMessage(fake.scene, { threadId: thread, text: 'first' }));
    const card = await cardIn(thread, 0);
    expect(JSON.stringify(card.message.embeds)).toContain('in this private thread only');
    fake.interact(
      fromThread(
        buttonInteraction(fake.scene, {
          customId: button(card.message, 'Always allow here').custom_id,
          message: card.message,
          channelId: thread,
        }),
      ),
    );
    await answered(thread, 'first');
    expect(runs).toEqual(['api']);
    const stored = await h.app.pool.query(`SELECT channel FROM countersign.grants`);
    expect(stored.rows).toEqual([{ channel: thread }]);

    // In the parent channel the same call still needs a card: the grant is not its.
    const mention = snowflake();
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'second', id: mention }));
    const parentCard = await cardIn(mention, 0);
    expect(button(parentCard.message, 'Approve')).toBeDefined();
    expect(runs).toEqual(['api']);

    // Inside the thread it covers the call: it runs with no card.
    const before = fake.messagesIn(thread).length;
    fake.userSays(threadMessage(fake.scene, { threadId: thread, text: 'third' }));
    await answered(thread, 'third');
    expect(runs).toEqual(['api', 'api']);
    expect(cardsIn(thread, before)).toEqual([]);

    // Listed in the thread, not in the parent channel.
    expect(await listGrants(thread)).toContain('restart_service');
    const inParent = await listGrants(fake.scene.channelId);
    expect(inParent).not.toContain('restart_service');
    expect(inParent).toMatch(/No standing grants apply here/);
  });

  it('made in a public thread, still covers the parent channel (anyone there can see the thread)', async () => {
    const first = snowflake();
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'fourth', id: first }));
    const card = await cardIn(first, 0);
    expect(JSON.stringify(card.message.embeds)).toContain('in the channel this was asked in');
    const ran = runs.length;
    fake.interact(
      fromThread(
        buttonInteraction(fake.scene, {
          customId: button(card.message, 'Always allow here').custom_id,
          message: card.message,
          channelId: first,
        }),
      ),
    );
    await answered(first, 'fourth');
    // A new mention in the parent starts a new public thread, which the grant covers: no card.
    const next = snowflake();
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'fifth', id: next }));
    await answered(next, 'fifth');
    expect(cardsIn(next, 0)).toEqual([]);
    expect(runs.length).toBe(ran + 2);
    const stored = await h.app.pool.query(`SELECT channel FROM countersign.grants ORDER BY created_at`);
    expect(stored.rows).toEqual([{ channel: thread }, { channel: fake.scene.channelId }]);
  });

  it('of the parent channel, still applies in its private threads and is listed there', async () => {
    // Runs after the public-thread grant above: the parent channel's grant covers this thread's call.
    const ran = runs.length;
    fake.userSays(threadMessage(fake.scene, { threadId: otherThread, text: 'sixth' }));
    await answered(otherThread, 'sixth');
    expect(cardsIn(otherThread, 0)).toEqual([]);
    expect(runs.length).toBe(ran + 1);
    const listed = await listGrants(otherThread);
    expect(listed).toContain(`channel ${fake.scene.channelId}`);
    expect(listed).not.toContain(`channel ${thread}`);
    // The first thread lists its own grant and the parent's.
    const inThread = await listGrants(thread);
    expect(inThread).toContain(`channel ${thread}`);
    expect(inThread).toContain(`channel ${fake.scene.channelId}`);
  });
});
