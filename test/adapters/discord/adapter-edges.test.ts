import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import {
  botAuthoredMessage,
  buttonInteraction,
  dmMessage,
  guildMessage,
  guildMessageMentioningBot,
  threadMessage,
} from '../../fixtures/discord/payloads.ts';
import { startHarness, type Harness } from '../../helpers/harness.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';
import { TEXTS } from '../../../src/core/texts.ts';
import { MENTION_NEEDED } from '../../../src/adapters/discord/on-message.ts';

const SLOW = 'one two three four five six seven eight nine ten '.repeat(6).trim();

const script: Script = {
  rules: [
    { match: 'take your time', rounds: [{ text: SLOW, chunkSize: 6, delayMs: 100 }] },
    { rounds: [{ text: 'echo: {{lastUser}}' }] },
  ],
};

type Button = { label: string; custom_id: string };
const buttonsOf = (message: Record<string, unknown>): Button[] =>
  ((message.components as Array<{ components: Button[] }> | undefined) ?? []).flatMap((r) => r.components);

const THREADS = 'POST /channels/:channel_id/messages/:message_id/threads';

describe('Discord adapter edge cases against the fake Discord', () => {
  let fake: FakeDiscord;
  let db: TestDatabase;
  let h: Harness;

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    db = await createTestDatabase();
    h = await startHarness({
      db,
      script,
      env: {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.scene.applicationId,
        DISCORD_API_URL: fake.restUrl,
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    await db.drop();
  });

  const finalText = (channel: string, expected: string) =>
    fake.until(
      () => (fake.botTextIn(channel).includes(expected) ? true : undefined),
      `"${expected.slice(0, 40)}" in ${channel}`,
      45_000,
    );

  it('registers global commands when no guild is configured', () => {
    expect(fake.commandPuts('global')).toBe(1);
    expect(fake.commandPuts(fake.scene.guildId)).toBe(0);
  });

  it('ignores bots, system messages and guild messages that do not mention it', async () => {
    const since = fake.requests.length;
    fake.userSays(botAuthoredMessage(fake.scene, { text: 'bot says hi' }));
    fake.userSays({ ...guildMessageMentioningBot(fake.scene, { text: 'pinned a message' }), type: 6 });
    fake.userSays(guildMessage(fake.scene, { text: 'people talking among themselves' }));
    // Events are handled in order: once this DM is answered, the three above were seen and dropped.
    fake.userSays(dmMessage(fake.scene, { text: 'marker' }));
    await finalText(fake.scene.dmChannelId, 'echo: marker');
    expect(fake.requestsMatching({ route: THREADS, since })).toHaveLength(0);
    const posts = fake.requestsMatching({ route: 'POST /channels/:channel_id/messages', since });
    expect(posts.map((p) => p.params.channel_id)).toEqual([fake.scene.dmChannelId]);
  });

  it('answers a mention inside a thread someone else started in that thread', async () => {
    const thread = fake.createThread({ name: 'incident 42' });
    const threadId = thread.id as string;
    const since = fake.requests.length;
    fake.userSays(threadMessage(fake.scene, { threadId, text: 'what now?' }));
    await finalText(threadId, 'echo: what now?');
    expect(fake.requestsMatching({ route: THREADS, since })).toHaveLength(0);
  });

  it('stays quiet in a thread someone else started when not mentioned', async () => {
    const thread = fake.createThread({ name: 'chatter' });
    const threadId = thread.id as string;
    fake.userSays(threadMessage(fake.scene, { threadId, text: 'just us here', mentionBot: false }));
    fake.userSays(dmMessage(fake.scene, { text: 'second marker' }));
    await finalText(fake.scene.dmChannelId, 'echo: second marker');
    expect(fake.botTextIn(threadId)).toEqual([]);
  });

  it('says it is temporarily unavailable when the message cannot be queued', async () => {
    await h.app.pool.query(`ALTER FUNCTION countersign.enqueue_work_item RENAME TO enqueue_work_item_down`);
    try {
      fake.userSays(dmMessage(fake.scene, { text: 'are you there?' }));
      await finalText(fake.scene.dmChannelId, TEXTS.unavailable);
    } finally {
      await h.app.pool.query(`ALTER FUNCTION countersign.enqueue_work_item_down RENAME TO enqueue_work_item`);
    }
    fake.userSays(dmMessage(fake.scene, { text: 'and now?' }));
    await finalText(fake.scene.dmChannelId, 'echo: and now?');
  });

  const streamingReply = async (text: string) => {
    const before = fake.messagesIn(fake.scene.dmChannelId).length;
    fake.userSays(dmMessage(fake.scene, { text }));
    return fake.until(
      () =>
        fake
          .messagesIn(fake.scene.dmChannelId)
          .slice(before)
          .find((m) => m.source === 'rest' && buttonsOf(m.message).some((b) => b.label === 'Stop')),
      'a reply with a Stop button',
      45_000,
    );
  };

  it('refuses a Stop click from someone who neither asked nor approves, telling only them', async () => {
    const reply = await streamingReply('take your time, first');
    const stop = buttonsOf(reply.message).find((b) => b.label === 'Stop')!;
    const bystander = { ...fake.scene.human, id: '888888888888888888', username: 'bystander' };
    const click = fake.interact(
      buttonInteraction(fake.scene, { customId: stop.custom_id, message: reply.message, user: bystander, inDm: true }),
    );
    await fake.until(() => (click.followupIds.length ? true : undefined), 'the private refusal', 45_000);
    expect(click.response?.type).toBe(6); // DEFERRED_UPDATE_MESSAGE: acknowledged at once
    const notice = fake.message(click.followupIds[0]!)!;
    expect(notice.ephemeral).toBe(true);
    expect(notice.message.content).toMatch(/Only the person who asked, or an approver/);
    await fake.until(() => (reply.message.content === SLOW ? true : undefined), 'the turn to finish unstopped', 45_000);
  });

  it('stops a streaming turn when the requester clicks Stop', async () => {
    const reply = await streamingReply('take your time, second');
    const stop = buttonsOf(reply.message).find((b) => b.label === 'Stop')!;
    fake.interact(buttonInteraction(fake.scene, { customId: stop.custom_id, message: reply.message, inDm: true }));
    await fake.until(
      () => (String(reply.message.content).endsWith(`_Stopped by discord:${fake.scene.human.id}._`) ? true : undefined),
      'the stopped reply',
      45_000,
    );
    expect(reply.message.content).not.toContain(SLOW);
    expect(buttonsOf(reply.message)).toEqual([]);
  });
});

describe('Discord adapter without the Message Content intent', () => {
  let fake: FakeDiscord;
  let db: TestDatabase;
  let h: Harness;

  beforeAll(async () => {
    // Discord closes IDENTIFY with 4014 when the privileged intent is not enabled in the portal.
    fake = await FakeDiscord.start({ disallowedIntents: 1 << 15 });
    db = await createTestDatabase();
    h = await startHarness({
      db,
      script,
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

  const finalText = (channel: string, expected: string) =>
    fake.until(() => (fake.botTextIn(channel).includes(expected) ? true : undefined), expected, 45_000);

  it('still connects, and answers mentions and DMs', async () => {
    expect(fake.gateway.sessions.length).toBe(1);
    expect(fake.gateway.sessions[0]!.intents & (1 << 15)).toBe(0);
    fake.userSays(dmMessage(fake.scene, { text: 'dm without the intent' }));
    await finalText(fake.scene.dmChannelId, 'echo: dm without the intent');
    const since = fake.requests.length;
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'mention without the intent' }));
    const thread = await fake.waitForRequest({ route: THREADS, since });
    await finalText((thread.response as { id: string }).id, 'echo: mention without the intent');
  });

  it('asks once for a mention when follow-ups in its thread arrive without their text', async () => {
    const since = fake.requests.length;
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'start here' }));
    const thread = await fake.waitForRequest({ route: THREADS, since });
    const threadId = (thread.response as { id: string }).id;
    await finalText(threadId, 'echo: start here');
    fake.userSays(threadMessage(fake.scene, { threadId, text: 'unseen one', mentionBot: false }));
    fake.userSays(threadMessage(fake.scene, { threadId, text: 'unseen two', mentionBot: false }));
    await finalText(threadId, MENTION_NEEDED);
    fake.userSays(threadMessage(fake.scene, { threadId, text: 'seen', mentionBot: true }));
    await finalText(threadId, 'echo: seen');
    expect(fake.botTextIn(threadId)).toEqual(['echo: start here', MENTION_NEEDED, 'echo: seen']);
  });
});
