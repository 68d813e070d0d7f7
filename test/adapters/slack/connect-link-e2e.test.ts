import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { startFakeOAuthServer, type FakeOAuthServer } from '../../fakes/oauth/server.ts';
import { appMention, eventCallback, eventsApiEnvelope } from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { followConnectLink } from '../../helpers/connect-link.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';

const ALICE = 'U0ALICE001';
const BOB = 'U0BOB00001';
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
        TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        PUBLIC_URL: 'https://countersign.example.com',
      },
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
    // Bob connected earlier: the server's tools are known.
    const bob = { platform: 'slack', userId: BOB, workspace: fake.team };
    const started = await h.app.connections!.start(bob, 'tracker');
    if (!started.ok) throw new Error(started.message);
    const { code, state } = await followConnectLink(h.app.http.port, started.url, oauth, 'bob');
    expect((await h.app.connections!.complete(state, code)).ok).toBe(true);
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

    const { code, state } = await followConnectLink(h.app.http.port, url, oauth, 'alice');
    const page = await fetch(
      `http://127.0.0.1:${h.app.http.port}/oauth/callback?code=${encodeURIComponent(code)}&state=${encodeURIComponent(state)}`,
    );
    expect(await page.text()).toContain('you can go back to Slack');
    await waitFor(
      async () => (fake.textIn(CHANNEL, mention.ts).includes('You are alice') ? true : undefined),
      20_000,
      'the turn to go on as alice',
    );
    expect(oauth.calls.at(-1)).toMatchObject({ user: 'alice', tool: 'whoami' });
  });
});
