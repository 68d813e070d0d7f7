import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import { buttonInteraction, guildMessageMentioningBot } from '../../fixtures/discord/payloads.ts';
import { snowflake } from '../../fixtures/discord/snowflake.ts';
import type { Json } from '../../fixtures/discord/objects.ts';
import { startHarness, type Harness } from '../../helpers/harness.ts';
import { countingTool } from '../../helpers/tools.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';

const runs: string[] = [];
const restartTool = countingTool('restart_service', runs, { risk: 'high', result: 'restarted' });
const script: Script = {
  rules: [
    {
      match: 'restart',
      rounds: [
        { text: 'Restarting.', toolCalls: [{ name: 'restart_service', args: { service: 'api' } }] },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

/** The payload with its member given `roles` (what Discord sends for a member who has them). */
function withRoles(payload: Json, roles: string[]): Json {
  const member = payload.member as Json;
  return { ...payload, member: { ...member, roles } };
}

describe('a policy whose approvers are a Discord role', () => {
  let fake: FakeDiscord;
  let h: Harness;
  let oncall: string;
  const bob = { id: snowflake(), username: 'bob', global_name: 'Bob', discriminator: '0', avatar: null };
  const carol = { id: snowflake(), username: 'carol', global_name: 'Carol', discriminator: '0', avatar: null };

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    oncall = fake.world.addRole('oncall', [bob.id]);
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-policy-'));
    const policyFile = path.join(dir, 'policy.yaml');
    writeFileSync(policyFile, `version: 1\napprovers: [discord-role:${oncall}]\n`);
    h = await startHarness({
      script,
      tools: [restartTool],
      env: {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.scene.applicationId,
        DISCORD_GUILD_ID: fake.scene.guildId,
        DISCORD_API_URL: fake.restUrl,
        POLICY_FILE: policyFile,
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it("refuses the requester's own Approve and a member without the role; the role's member countersigns once", async () => {
    runs.length = 0;
    const posted = fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'restart the api' }));
    const threadId = posted.message.id as string;
    const card = await fake.until(
      () =>
        fake.messagesIn(threadId).find((m) => JSON.stringify(m.message.components ?? []).includes('"label":"Approve"')),
      'the approval card',
      45_000,
    );
    const approve = (card.message.components as Array<{ components: Array<{ label: string; custom_id: string }> }>)
      .flatMap((r) => r.components)
      .find((b) => b.label === 'Approve')!;
    const click = (user: Json | undefined, roles: string[]) =>
      fake.interact(
        withRoles(
          buttonInteraction(fake.scene, {
            customId: approve.custom_id,
            message: card.message,
            ...(user ? { user: user as never } : {}),
          }),
          roles,
        ),
      );
    const refusal = async (state: ReturnType<typeof click>, who: string) => {
      await fake.until(() => (state.followupIds.length ? true : undefined), `${who}'s private refusal`, 45_000);
      const notice = fake.message(state.followupIds[0]!)!;
      expect(notice.ephemeral).toBe(true);
      return String(notice.message.content);
    };

    // Alice asked: the built-in policy makes a high-risk call need someone else's signature.
    expect(await refusal(click(undefined, []), 'the requester')).toMatch(/second signature/);
    // Carol has no oncall role: she is nobody's approver.
    expect(await refusal(click(carol, []), 'Carol')).toMatch(/not allowed|Only an approver/);
    expect(runs).toEqual([]);

    click(bob, [oncall]);
    await fake.until(
      () => (fake.botTextIn(threadId).includes('Result: restarted api') ? true : undefined),
      'the result',
      45_000,
    );
    expect(runs).toEqual(['api']);
    // The turn knows the channel its thread belongs to, for policies that name channels.
    const reply = await h.app.pool.query(
      `SELECT item->'reply'->>'parent' AS parent FROM countersign.work_items WHERE item->'reply'->>'channel' = $1 LIMIT 1`,
      [threadId],
    );
    expect(reply.rows[0]?.parent).toBe(fake.scene.channelId);
    // The audit names who countersigned, with the role they had.
    const { rows } = await h.app.pool.query(
      `SELECT actor FROM countersign.approval_audit WHERE event = 'consumed' ORDER BY id DESC LIMIT 1`,
    );
    expect(rows[0]?.actor).toMatchObject({ platform: 'discord', userId: bob.id, groups: [oncall] });
  });
});

describe('a card needing a role to countersign, with an approvals channel', () => {
  let fake: FakeDiscord;
  let h: Harness;
  let oncall: string;
  const bob = { id: snowflake(), username: 'bob', global_name: 'Bob', discriminator: '0', avatar: null };

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    oncall = fake.world.addRole('oncall', [bob.id]);
    const policyFile = path.join(mkdtempSync(path.join(tmpdir(), 'cs-policy-')), 'policy.yaml');
    writeFileSync(policyFile, `version: 1\napprovers: [discord-role:${oncall}]\n`);
    h = await startHarness({
      script,
      tools: [restartTool],
      env: {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.scene.applicationId,
        DISCORD_GUILD_ID: fake.scene.guildId,
        DISCORD_API_URL: fake.restUrl,
        POLICY_FILE: policyFile,
        APPROVAL_CHANNEL: `discord:${fake.world.opsChannelId}`,
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('posts a copy there with a link back; the decision made on the copy updates the card too', async () => {
    runs.length = 0;
    const posted = fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'restart the api' }));
    const threadId = posted.message.id as string;
    const hasButtons = (m: { message: Json }) =>
      JSON.stringify(m.message.components ?? []).includes('"label":"Approve"');
    const card = await fake.until(() => fake.messagesIn(threadId).find(hasButtons), 'the card', 45_000);
    const copy = await fake.until(() => fake.messagesIn(fake.world.opsChannelId).find(hasButtons), 'the copy', 45_000);
    expect(JSON.stringify(card.message.embeds)).toContain('Sent to the approvals channel for a countersignature.');
    expect(JSON.stringify(copy.message.embeds)).toContain(
      `https://discord.com/channels/${fake.scene.guildId}/${threadId}/${card.message.id as string}`,
    );
    const approve = (copy.message.components as Array<{ components: Array<{ label: string; custom_id: string }> }>)
      .flatMap((r) => r.components)
      .find((b) => b.label === 'Approve')!;
    fake.interact(
      withRoles(
        buttonInteraction(fake.scene, { customId: approve.custom_id, message: copy.message, user: bob as never }),
        [oncall],
      ),
    );
    await fake.until(
      () => (fake.botTextIn(threadId).includes('Result: restarted api') ? true : undefined),
      'the result in the thread',
      45_000,
    );
    expect(runs).toEqual(['api']);
    await fake.until(
      () =>
        [card, copy].every((m) => JSON.stringify(fake.message(m.message.id as string)!.message.components) === '[]')
          ? true
          : undefined,
      'both cards to lose their buttons',
      45_000,
    );
  });
});
