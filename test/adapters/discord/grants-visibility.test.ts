import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import { dmChannel, type ApiUser, type Json } from '../../fixtures/discord/objects.ts';
import { buttonInteraction, dmMessage, slashCommandInteraction } from '../../fixtures/discord/payloads.ts';
import { snowflake } from '../../fixtures/discord/snowflake.ts';
import { startHarness, type Harness } from '../../helpers/harness.ts';

const person = (username: string): ApiUser => ({
  id: snowflake(),
  username,
  global_name: username,
  discriminator: '0',
  avatar: null,
});

/**
 * `/countersign grants` on Discord lists a grant only to someone who can view the place it applies
 * to, and answers a person the policy refuses with the refusal. Bob is a plain member: the #ops
 * channel is closed to him, and he is in one of two private threads. Carol is refused by the policy.
 */
describe('/countersign grants on Discord: the policy and what the viewer can see', () => {
  let fake: FakeDiscord;
  let h: Harness;
  const bob = person('bob');
  const carol = person('carol');
  let bobDm: string;
  let closedThread: string;
  let openThread: string;
  const REFUSAL = 'Sorry, this bot is for the ops team.';

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    const world = fake.world;
    world.addMember(bob);
    world.addMember(carol);
    world.restrictChannel(world.opsChannelId, [fake.scene.human.id]);
    closedThread = world.createThread({ parentId: fake.scene.channelId, name: 'incident', type: 12 }).id as string;
    openThread = world.createThread({ parentId: fake.scene.channelId, name: 'deploys', type: 12 }).id as string;
    world.joinThread(openThread, bob.id);
    const dm = dmChannel({ recipient: bob });
    bobDm = dm.id as string;
    world.channels.set(bobDm, dm);

    const dir = mkdtempSync(path.join(tmpdir(), 'cs-policy-'));
    const policyFile = path.join(dir, 'policy.yaml');
    writeFileSync(policyFile, `version: 1\nrequesters:\n  deny: [discord:${carol.id}]\n  refusal: '${REFUSAL}'\n`);
    h = await startHarness({
      env: {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.scene.applicationId,
        DISCORD_GUILD_ID: fake.scene.guildId,
        DISCORD_API_URL: fake.restUrl,
        POLICY_FILE: policyFile,
      },
    });
    // The bot is connected once it answers a DM.
    fake.userSays(dmMessage(fake.scene, { text: 'hello' }));
    await fake.until(() => (fake.botTextIn(fake.scene.dmChannelId).length ? true : undefined), 'the bot', 45_000);
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  /** A live grant of `tool` made by Bob, applying in `channel` (stored as the app stores them). */
  async function grant(tool: string, channel: string, dm = false): Promise<void> {
    await h.app.pool.query(
      `INSERT INTO countersign.grants
         (id, tool, args, platform, workspace, channel, dm, covers, rule, created_by, expires_at)
       VALUES ($1, $2, '{}', 'discord', $3, $4, $5, $6, 'rules[0]', $7, now() + interval '1 hour')`,
      [
        randomUUID(),
        tool,
        dm ? '' : fake.scene.guildId,
        channel,
        dm,
        `Always allow here: later \`${tool}\` calls`,
        JSON.stringify({ platform: 'discord', userId: bob.id, workspace: dm ? '@me' : fake.scene.guildId }),
      ],
    );
  }

  /** Runs `/countersign grants` as `user` and returns the private answer's text. */
  async function listGrants(user: ApiUser, where: { inDm: boolean; channelId: string }): Promise<string> {
    const list = fake.interact(
      slashCommandInteraction(fake.scene, {
        name: 'countersign',
        options: [{ name: 'grants', type: 1 }],
        user,
        ...where,
      }),
    );
    const shown = await fake.until(
      () => {
        const id = list.originalMessageId;
        const message = id ? fake.message(id) : undefined;
        const text = message ? String(message.message.content) : '';
        // Not while it is still "thinking" (a deferred reply carries LOADING until it is edited).
        const loading = message ? ((message.message.flags as number) & 128) !== 0 : true;
        return text && !loading ? message : undefined;
      },
      'the grants answer',
      45_000,
    );
    expect(shown.ephemeral).toBe(true);
    return String(shown.message.content);
  }

  it('lists in a DM only the grants of places the viewer can view', async () => {
    await grant('in_general', fake.scene.channelId);
    await grant('in_closed_ops', fake.world.opsChannelId);
    await grant('in_closed_thread', closedThread);
    await grant('in_open_thread', openThread);
    await grant('in_his_dm', bobDm, true);
    const text = await listGrants(bob, { inDm: true, channelId: bobDm });
    expect(text).toContain('in_general');
    expect(text).toContain('in_open_thread');
    expect(text).toContain('in_his_dm');
    expect(text).not.toContain('in_closed_ops');
    expect(text).not.toContain('in_closed_thread');
    expect(text).toMatch(/\(3\)/);
  });

  it('answers a person the policy refuses with the refusal, and lists nothing', async () => {
    await grant('refused_sees_nothing', fake.scene.channelId);
    const text = await listGrants(carol, { inDm: false, channelId: fake.scene.channelId });
    expect(text).toBe(REFUSAL);
  });

  it('answers a refused person’s 👍 with the refusal, and records nothing', async () => {
    const answer = await fake.until(
      () =>
        fake
          .messagesIn(fake.scene.dmChannelId)
          .find((m) => JSON.stringify(m.message.components ?? []).includes('feedback:up:')),
      'the answer with its feedback buttons',
      45_000,
    );
    const up = (answer.message.components as Array<{ components: Array<{ custom_id: string }> }>)
      .flatMap((r) => r.components)
      .find((b) => b.custom_id.startsWith('feedback:up:'))!;
    const voted = fake.interact(
      buttonInteraction(fake.scene, {
        customId: up.custom_id,
        message: answer.message as Json,
        inDm: false,
        user: carol,
        channelId: fake.scene.channelId,
      }),
    );
    const reply = await fake.until(
      () => {
        const id = voted.originalMessageId;
        const message = id ? fake.message(id) : undefined;
        return message && String(message.message.content) === REFUSAL ? message : undefined;
      },
      'the refusal',
      45_000,
    );
    expect(reply.ephemeral).toBe(true);
    const { rows } = await h.app.pool.query(`SELECT count(*)::int AS n FROM countersign.turn_feedback`);
    expect(rows[0]!.n).toBe(0);
  });
});
