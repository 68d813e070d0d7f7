import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { startFakeOAuthServer, type FakeOAuthServer } from '../fakes/oauth/server.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { loadConfig } from '../../src/config.ts';
import { runCli } from '../helpers/processes.ts';

const script: Script = {
  rules: [
    {
      match: '^who am i',
      rounds: [{ toolCalls: [{ name: 'tracker__whoami', args: {} }] }, { text: 'You are {{lastToolResult}}' }],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const alice = { platform: 'test', userId: 'U1' };
const bob = { platform: 'test', userId: 'U2' };

/**
 * Per-person MCP servers end to end (#34): a real OAuth authorization server and a protected MCP
 * server on 127.0.0.1, the app's own callback route, and the requester's identity at the server.
 */
describe('per-person connections to an MCP server', () => {
  let fake: FakeOAuthServer;
  let h: Harness;

  beforeAll(async () => {
    fake = await startFakeOAuthServer();
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-connections-'));
    const mcp = path.join(dir, 'mcp.json');
    // Trusted: its read-only hint is believed, so whoami runs without a card.
    writeFileSync(mcp, JSON.stringify({ mcpServers: { tracker: { url: fake.mcpUrl, auth: 'oauth', trusted: true } } }));
    h = await startHarness({
      script,
      env: {
        MCP_CONFIG: mcp,
        TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        // Never fetched by a browser here: the test carries the code to the callback itself.
        PUBLIC_URL: 'https://countersign.example.com',
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  /** The person's browser: signs in at the server, and is sent back to the bot's callback. */
  async function connect(person: typeof alice, user: string): Promise<{ status: number; page: string }> {
    const started = await h.app.connections!.start(person, 'tracker');
    if (!started.ok) throw new Error(started.message);
    const { code, state, redirect } = await fake.approve(new URL(started.url), user);
    expect(redirect.pathname).toBe('/oauth/callback');
    return callback({ code, state: state ?? '' });
  }

  async function callback(query: Record<string, string>): Promise<{ status: number; page: string }> {
    const url = new URL(`http://127.0.0.1:${h.app.http.port}/oauth/callback`);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const res = await fetch(url);
    return { status: res.status, page: await res.text() };
  }

  it('asks the person to connect before any tool can run as them, then runs it as them', async () => {
    const refused = await h.say('conv-alice-0', 'who am i');
    // No one is connected yet: the server's tools are not even known; the model is told how to connect.
    expect((await h.settled(refused.id)).status).toBe('done');

    const page = await connect(alice, 'alice');
    expect(page.status).toBe(200);
    expect(page.page).toContain('Connected to tracker');
    expect(page.page).not.toMatch(/token|state|code=/i);

    const item = await h.say('conv-alice', 'who am i');
    const settled = await h.settled(item.id);
    expect(settled.result?.text).toBe('You are alice');
    expect(fake.calls.at(-1)).toMatchObject({ user: 'alice', tool: 'whoami' });
  });

  it('runs each person’s call with their own account, and refuses one without a connection', async () => {
    const before = fake.calls.length;
    const unconnected = await h.say('conv-bob', 'who am i', { requester: bob });
    const refused = await h.settled(unconnected.id);
    expect(refused.result?.text).toContain('/countersign connect tracker');
    expect(fake.calls.length).toBe(before);

    await connect(bob, 'bob');
    const mine = await h.say('conv-bob-2', 'who am i', { requester: bob });
    expect((await h.settled(mine.id)).result?.text).toBe('You are bob');
    const theirs = await h.say('conv-alice-2', 'who am i');
    expect((await h.settled(theirs.id)).result?.text).toBe('You are alice');
    expect(fake.calls.slice(before).map((c) => c.user)).toEqual(['bob', 'alice']);
    const audit = await h.app.pool.query<{ event: string }>(
      `SELECT event FROM countersign.approval_audit WHERE event IN ('connected', 'connection_used', 'connection_refused')`,
    );
    expect(new Set(audit.rows.map((r) => r.event))).toEqual(
      new Set(['connected', 'connection_used', 'connection_refused']),
    );
  });

  it('refuses forged, replayed and expired states with a page that says so, and stores nothing', async () => {
    const carol = { platform: 'test', userId: 'U3' };
    expect((await callback({ code: 'x', state: 'A'.repeat(43) })).page).toContain('not a Connect link I made');
    const started = await h.app.connections!.start(carol, 'tracker');
    if (!started.ok) throw new Error(started.message);
    const { code, state } = await fake.approve(new URL(started.url), 'carol');
    await h.app.pool.query(`UPDATE countersign.oauth_states SET expires_at = now() - interval '1 second'`);
    const expired = await callback({ code, state: state ?? '' });
    expect(expired.status).toBe(400);
    expect(expired.page).toContain('expired');
    expect(await h.app.connections!.isConnected(carol, 'tracker')).toBe(false);
    // A second Connect after connecting says so instead of making a new link.
    const again = await h.app.connections!.start(alice, 'tracker');
    expect(again).toMatchObject({ ok: false });
    // A replayed callback (the state used once already) is refused too.
    const fresh = await h.app.connections!.start(carol, 'tracker');
    if (!fresh.ok) throw new Error(fresh.message);
    const second = await fake.approve(new URL(fresh.url), 'carol');
    expect((await callback({ code: second.code, state: second.state ?? '' })).status).toBe(200);
    expect((await callback({ code: second.code, state: second.state ?? '' })).page).toContain('already used');
  });

  it('keeps tokens sealed at rest, and out of the listing people see', async () => {
    const { rows } = await h.app.pool.query(`SELECT * FROM countersign.connections`);
    expect(JSON.stringify(rows)).not.toMatch(/"access_token"|Bearer/);
    const text = await h.app.connections!.describe(alice);
    expect(text).toContain('tracker: connected');
  });

  it('lets an operator list who is connected and revoke a connection, never showing a token', async () => {
    const list = runCli(['connections', 'list', '--json'], { DATABASE_URL: h.db.url, LOG_LEVEL: 'silent' });
    expect((await list.exited).code, list.stderr()).toBe(0);
    const listed = JSON.parse(list.stdout()) as Array<Record<string, unknown>>;
    expect(listed.map((c) => `${String(c.userId)}:${String(c.server)}`)).toContain('U1:tracker');
    expect(list.stdout()).not.toMatch(/token/i);
    const revoke = runCli(['connections', 'revoke', 'test:U2', 'tracker'], {
      DATABASE_URL: h.db.url,
      LOG_LEVEL: 'silent',
    });
    expect((await revoke.exited).code, revoke.stderr()).toBe(0);
    expect(await h.app.connections!.isConnected(bob, 'tracker')).toBe(false);
    const after = await h.say('conv-bob-3', 'who am i', { requester: bob });
    expect((await h.settled(after.id)).result?.text).toContain('/countersign connect tracker');
  });
});

describe('per-person server configuration', () => {
  it('needs TOKEN_ENCRYPTION_KEY of 32 bytes, and names the problem without the value', () => {
    expect(() => loadConfig({ TOKEN_ENCRYPTION_KEY: 'c2hvcnQ=' })).toThrow(
      /TOKEN_ENCRYPTION_KEY: .*decodes to 5 bytes/,
    );
    expect(() => loadConfig({ TOKEN_ENCRYPTION_KEY_PREVIOUS: randomBytes(32).toString('base64') })).toThrow(
      /TOKEN_ENCRYPTION_KEY: is missing/,
    );
  });
});
