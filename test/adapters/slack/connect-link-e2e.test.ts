import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { startFakeOAuthServer, type FakeOAuthServer } from '../../fakes/oauth/server.ts';
import {
  appMention,
  blockAction,
  buttonIn,
  eventCallback,
  eventsApiEnvelope,
  interactiveEnvelope,
  slashCommand,
  slashCommandEnvelope,
} from '../../fixtures/slack/events.ts';
import { connectionOf } from '../../../src/connections/store.ts';
import { TokenSealer } from '../../../src/connections/token-crypto.ts';
import { jobsIdle, startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { followConnectLink } from '../../helpers/connect-link.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';

const ALICE = 'U0ALICE001';
const BOB = 'U0BOB00001';
const CAROL = 'U0CAROL001';
const MALLORY = 'U0MALLORY1';
const KEY = randomBytes(32).toString('base64');
const CHANNEL = 'C0DEV00001';

const script: Script = {
  rules: [
    {
      match: 'who am i',
      rounds: [{ toolCalls: [{ name: 'tracker__whoami', args: {} }] }, { text: 'You are {{lastToolResult}}' }],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

/**
 * A turn that needs the requester's own connection, on Slack: the card waits in the thread, the
 * Connect link goes to the requester alone by DM (never into the channel), and once they sign in
 * the turn goes on in the thread, running as them.
 */
describe('a Connect link on Slack', () => {
  let fake: FakeSlack;
  let oauth: FakeOAuthServer;
  let h: Harness;

  beforeAll(async () => {
    fake = await FakeSlack.start();
    oauth = await startFakeOAuthServer();
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-slack-connect-'));
    const mcp = path.join(dir, 'mcp.json');
    writeFileSync(
      mcp,
      JSON.stringify({ mcpServers: { tracker: { url: oauth.mcpUrl, auth: 'oauth', trusted: true } } }),
    );
    h = await startHarness({
      script,
      env: {
        ...fake.env({ SLACK_STREAMING: 'off' }),
        MCP_CONFIG: mcp,
        TOKEN_ENCRYPTION_KEY: KEY,
        PUBLIC_URL: 'https://countersign.example.com',
      },
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
    // Bob connected earlier: the server's tools are known.
    const bob = { platform: 'slack', userId: BOB, workspace: fake.team };
    const started = await h.app.connections!.start(bob, 'tracker');
    if (!started.ok) throw new Error(started.message);
    const { code, state, browserSecrets } = await followConnectLink(h.app.http.port, started.url, oauth, 'bob');
    expect((await h.app.connections!.complete(state, code, browserSecrets)).ok).toBe(true);
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    await oauth.close();
  });

  it('sends the link to the requester alone, and goes on as them once they connect', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'who am i' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    const dm = await waitFor(
      async () => fake.messages.find((m) => m.channel.startsWith('D') && m.text.includes('connect your own tracker')),
      20_000,
      'the private Connect link',
    );
    expect(fake.world.channel(dm.channel)?.user).toBe(ALICE);
    const url = /https?:\/\/\S+/
      .exec(dm.text)![0]
      .replace(/[>|].*$/, '')
      .replaceAll('&amp;', '&');
    // Nothing in the channel carries the link.
    expect(fake.messages.filter((m) => m.channel === CHANNEL).some((m) => m.text.includes(url))).toBe(false);

    const { code, state, cookie } = await followConnectLink(h.app.http.port, url, oauth, 'alice');
    const page = await fetch(
      `http://127.0.0.1:${h.app.http.port}/oauth/callback?code=${encodeURIComponent(code)}&state=${encodeURIComponent(state)}`,
      { headers: { cookie } },
    );
    expect(await page.text()).toContain('you can go back to Slack');
    await waitFor(
      async () => (fake.textIn(CHANNEL, mention.ts).includes('You are alice') ? true : undefined),
      20_000,
      'the turn to go on as alice',
    );
    expect(oauth.calls.at(-1)).toMatchObject({ user: 'alice', tool: 'whoami' });
  });

  it('offers a Connect link button and “Continue without it”, which only the requester can press', async () => {
    const mention = appMention({ user: CAROL, channel: CHANNEL, text: 'who am i' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    const dm = await waitFor(
      async () =>
        fake.messages.find(
          (m) =>
            m.channel.startsWith('D') &&
            m.text.includes('connect your own tracker') &&
            fake.world.channel(m.channel)?.user === CAROL,
        ),
      20_000,
      'the private Connect message',
    );
    const link = buttonIn(dm.blocks, 'Connect tracker') as unknown as { url?: string; value?: string };
    expect(link.url).toContain('/oauth/start');
    expect(link.value).toBeUndefined();
    const without = buttonIn(dm.blocks, 'Continue without it');
    const press = (user: string) =>
      fake.deliver(
        interactiveEnvelope(
          blockAction(fake.team, {
            user,
            channel: dm.channel,
            messageTs: dm.ts,
            value: without.value,
            actionId: without.action_id,
          }),
        ),
      );

    // A stranger with the value (forwarded, guessed) decides nothing; only they are told why.
    await press(MALLORY);
    await waitFor(
      async () => (fake.messages.some((m) => m.ephemeralFor === MALLORY) ? true : undefined),
      20_000,
      'the stranger to be told why',
    );
    await jobsIdle(h.app.pool);
    const { rows } = await h.app.pool.query<{ status: string }>(
      `SELECT status FROM countersign.approval_envelopes WHERE requester->>'userId' = $1`,
      [CAROL],
    );
    expect(rows.map((r) => r.status)).toEqual(['pending']);

    await press(CAROL);
    await waitFor(
      async () => (/not run|unavailable|denied/.test(fake.textIn(CHANNEL, mention.ts).join('\n')) ? true : undefined),
      20_000,
      'the turn to go on without the tool',
    );
    expect(oauth.calls.some((c) => c.user === 'carol')).toBe(false);
    expect(
      await h.app.connections!.isConnected({ platform: 'slack', userId: CAROL, workspace: fake.team }, 'tracker'),
    ).toBe(false);
    // A second press after the card was decided changes nothing.
    await press(CAROL);
  });

  it('lists a person’s connections with a Disconnect button that ends only the clicker’s own, revoked at the server', async () => {
    const bob = { platform: 'slack', userId: BOB, workspace: fake.team };
    const before = await connectionOf(h.app.pool, new TokenSealer(KEY), bob, 'tracker');
    expect(await oauth.whoami(before!.tokens.access_token)).toBe('bob');

    const responseUrl = fake.responseUrl();
    await fake.deliver(
      slashCommandEnvelope({
        ...slashCommand(fake.team, { command: '/countersign', text: 'connections', user: BOB, channel: CHANNEL }),
        response_url: responseUrl,
      }),
    );
    const listed = await waitFor(
      async () => fake.responses.find((r) => responseUrl.endsWith(r.path))?.body as { blocks?: unknown } | undefined,
      20_000,
      'the connections list',
    );
    const disconnect = buttonIn(listed.blocks, 'Disconnect tracker');
    const press = (user: string) =>
      fake.deliver(
        interactiveEnvelope(
          blockAction(fake.team, {
            user,
            channel: CHANNEL,
            messageTs: '1700000000.000200',
            value: disconnect.value,
            actionId: disconnect.action_id,
          }),
        ),
      );
    const toldTo = (user: string, text: string) =>
      waitFor(
        async () => fake.messages.find((m) => m.ephemeralFor === user && m.text.includes(text)),
        20_000,
        `${user} to be told "${text}"`,
      );

    // The button names no person: Mallory pressing Bob's ends only her own, which she does not have.
    await press(MALLORY);
    await toldTo(MALLORY, 'You are not connected to tracker');
    expect(await h.app.connections!.isConnected(bob, 'tracker')).toBe(true);

    await press(BOB);
    await toldTo(BOB, 'tracker revoked your tokens');
    expect(await h.app.connections!.isConnected(bob, 'tracker')).toBe(false);
    // Revoked at the authorization server, not only forgotten here.
    expect(await oauth.whoami(before!.tokens.access_token)).toBeUndefined();
    const { rows } = await h.app.pool.query<{ detail: { server: string; revokedAtServer: string } }>(
      `SELECT detail FROM countersign.approval_audit WHERE event = 'disconnected'`,
    );
    expect(rows.map((r) => r.detail)).toEqual([
      expect.objectContaining({ server: 'tracker', revokedAtServer: 'revoked' }),
    ]);
  });
});
