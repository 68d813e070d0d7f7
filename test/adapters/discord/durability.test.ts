import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import { dmMessage, guildMessageMentioningBot } from '../../fixtures/discord/payloads.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startHarness, type Harness } from '../../helpers/harness.ts';

const THREADS = 'POST /channels/:channel_id/messages/:message_id/threads';
const script = { rules: [{ rounds: [{ text: 'echo: {{lastUser}}' }] }] };

describe('Discord with two gateway sessions (two ingress replicas) on one database', () => {
  let fake: FakeDiscord;
  let db: TestDatabase;
  let first: Harness;
  let second: Harness;
  beforeAll(async () => {
    fake = await FakeDiscord.start();
    db = await createTestDatabase();
    const env = {
      DISCORD_TOKEN: fake.token,
      DISCORD_APPLICATION_ID: fake.scene.applicationId,
      DISCORD_API_URL: fake.restUrl,
    };
    first = await startHarness({ db, script, env });
    second = await startHarness({ db, script, env, role: 'ingress' });
  });
  afterAll(async () => {
    await second.stop();
    await first.stop();
    await fake.close();
    await db.drop();
  });

  const items = async (conversation: string) =>
    Number(
      (
        await first.app.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM countersign.work_items WHERE conversation_id = $1`,
          [conversation],
        )
      ).rows[0]?.n,
    );

  it('makes one turn of a DM both sessions receive', async () => {
    expect(fake.gateway.sessions).toHaveLength(2);
    const message = dmMessage(fake.scene, { text: 'heard twice' });
    fake.userSays(message);
    await fake.until(
      () => (fake.botTextIn(fake.scene.dmChannelId).includes('echo: heard twice') ? true : undefined),
      'the reply',
      30_000,
    );
    expect(fake.gateway.dispatched('MESSAGE_CREATE').filter((e) => e.d.id === message.id)).toHaveLength(2);
    expect(fake.botTextIn(fake.scene.dmChannelId).filter((t) => t === 'echo: heard twice')).toHaveLength(1);
    expect(await items(`discord:dm:${fake.scene.dmChannelId}`)).toBe(1);
  });

  it('starts one thread and makes one turn of a mention both sessions receive', async () => {
    const since = fake.requests.length;
    const message = guildMessageMentioningBot(fake.scene, { text: 'mentioned twice' });
    fake.userSays(message);
    const threadId = message.id as string;
    await fake.until(
      () => (fake.botTextIn(threadId).includes('echo: mentioned twice') ? true : undefined),
      'the reply in the thread',
      30_000,
    );
    expect(fake.requestsMatching({ route: THREADS, since })).toHaveLength(1);
    expect(fake.botTextIn(threadId)).toEqual(['echo: mentioned twice']);
    // Neither session told the channel it could not start a thread.
    expect(fake.botTextIn(fake.scene.channelId)).toEqual([]);
    expect(await items(`discord:${threadId}`)).toBe(1);
  });
});
