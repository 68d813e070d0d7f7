import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import { startFakeOAuthServer, type FakeOAuthServer } from '../../fakes/oauth/server.ts';
import type { ApiUser, Json } from '../../fixtures/discord/objects.ts';
import { buttonInteraction, guildMessageMentioningBot } from '../../fixtures/discord/payloads.ts';
import { snowflake } from '../../fixtures/discord/snowflake.ts';
import { jobsIdle, startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { followConnectLink } from '../../helpers/connect-link.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';

const script: Script = {
  rules: [
    {
      match: 'who am i',
      rounds: [{ toolCalls: [{ name: 'tracker__whoami', args: {} }] }, { text: 'You are {{lastToolResult}}' }],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const MALLORY: ApiUser = {
  id: snowflake(),
  username: 'mallory',
  global_name: 'mallory',
  discriminator: '0',
  avatar: null,
};

type Button = { label: string; style: number; custom_id?: string; url?: string };
const buttonsOf = (message: Json) =>
  ((message.components as Json[] | undefined) ?? []).flatMap((row) => (row.components as Button[] | undefined) ?? []);

/**
 * A turn that needs the requester's own connection, on Discord: a mention has no interaction to
 * answer ephemerally, so the Connect link goes by DM, as a Link button beside "Continue without it".
 */
describe('a Connect link on Discord', () => {
  let fake: FakeDiscord;
  let oauth: FakeOAuthServer;
  let h: Harness;
  let dir: string;

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    fake.world.addMember(MALLORY);
    oauth = await startFakeOAuthServer();
    dir = mkdtempSync(path.join(tmpdir(), 'cs-discord-connect-'));
    const mcp = path.join(dir, 'mcp.json');
    writeFileSync(
      mcp,
      JSON.stringify({ mcpServers: { tracker: { url: oauth.mcpUrl, auth: 'oauth', trusted: true } } }),
    );
    h = await startHarness({
      script,
      env: {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.scene.applicationId,
        DISCORD_GUILD_ID: fake.scene.guildId,
        DISCORD_API_URL: fake.restUrl,
        MCP_CONFIG: mcp,
        TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        PUBLIC_URL: 'https://countersign.example.com',
      },
    });
    // Someone connected earlier: the server's tools are known.
    const other = { platform: 'discord', userId: snowflake(), workspace: fake.scene.guildId };
    const started = await h.app.connections!.start(other, 'tracker');
    if (!started.ok) throw new Error(started.message);
    const { code, state, browserSecrets } = await followConnectLink(h.app.http.port, started.url, oauth, 'someone');
    expect((await h.app.connections!.complete(state, code, browserSecrets)).ok).toBe(true);
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    await oauth.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The DM channel the bot opened with `user`, and the Connect message in it. */
  const connectDm = (user: ApiUser) =>
    fake.until(
      () => {
        for (const [id, channel] of fake.world.channels) {
          const recipients = (channel.recipients as ApiUser[] | undefined) ?? [];
          if (channel.type !== 1 || !recipients.some((r) => r.id === user.id)) continue;
          const found = fake
            .messagesIn(id)
            .find((m) => buttonsOf(m.message).some((b) => b.label === 'Continue without it'));
          if (found) return { channel: id, ...found };
        }
        return undefined;
      },
      'the private Connect message',
      30_000,
    );

  it('DMs the requester a Link button and “Continue without it”, and goes on as them once they connect', async () => {
    const human = fake.scene.human;
    const since = fake.requests.length;
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'who am i' }));
    const dm = await connectDm(human);
    const [link, without] = buttonsOf(dm.message);
    expect(link).toMatchObject({ style: 5, label: 'Connect tracker' });
    expect(link!.custom_id).toBeUndefined();
    expect(new URL(link!.url!).pathname).toBe('/oauth/start');
    expect(without).toMatchObject({ style: 2, label: 'Continue without it' });
    // The link is nowhere but the DM.
    const state = new URL(link!.url!).searchParams.get('s')!;
    const elsewhere = fake.requests
      .slice(since)
      .filter((r) => !r.path.includes(dm.channel))
      .map((r) => JSON.stringify(r.body ?? ''));
    expect(elsewhere.join('\n')).not.toContain(state);

    const { code, state: oauthState, cookie } = await followConnectLink(h.app.http.port, link!.url!, oauth, 'human');
    const page = await fetch(
      `http://127.0.0.1:${h.app.http.port}/oauth/callback?code=${encodeURIComponent(code)}&state=${encodeURIComponent(oauthState)}`,
      { headers: { cookie } },
    );
    expect(await page.text()).toContain('you can go back to Discord');
    await waitFor(
      async () => (oauth.calls.some((c) => c.user === 'human' && c.tool === 'whoami') ? true : undefined),
      20_000,
      'the call to run as the requester',
    );
  });

  it('lets only the requester press “Continue without it”', async () => {
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'who am i', author: MALLORY }));
    const dm = await connectDm(MALLORY);
    const without = buttonsOf(dm.message).find((b) => b.label === 'Continue without it')!;
    const pending = () =>
      h.app.pool.query<{ status: string }>(
        `SELECT status FROM countersign.approval_envelopes WHERE requester->>'userId' = $1`,
        [MALLORY.id],
      );

    // Someone else with the value decides nothing.
    fake.interact(
      buttonInteraction(fake.scene, { customId: without.custom_id!, message: dm.message, user: fake.scene.human }),
    );
    await jobsIdle(h.app.pool);
    expect((await pending()).rows.map((r) => r.status)).toEqual(['pending']);

    fake.interact(buttonInteraction(fake.scene, { customId: without.custom_id!, message: dm.message, user: MALLORY }));
    await waitFor(
      async () => ((await pending()).rows[0]?.status === 'consumed' ? true : undefined),
      20_000,
      'the card to be decided',
    );
    expect(oauth.calls.some((c) => c.user === 'mallory')).toBe(false);
  });
});
