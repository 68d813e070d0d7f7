import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobsIdle, startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { startFakeOAuthServer, type FakeOAuthServer } from '../fakes/oauth/server.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { loadConfig } from '../../src/config.ts';
import { parseMcpConfig } from '../../src/agent/tools/mcp/config.ts';
import { runCli } from '../helpers/processes.ts';
import { createTestDatabase } from '../helpers/db.ts';
import { confirmOnConnectPage, followConnectLink, returnToCallback } from '../helpers/connect-link.ts';

const script: Script = {
  rules: [
    {
      match: '^who am i',
      rounds: [{ toolCalls: [{ name: 'tracker__whoami', args: {} }] }, { text: 'You are {{lastToolResult}}' }],
    },
    {
      match: '^file an issue',
      rounds: [
        { toolCalls: [{ name: 'tracker__create_issue', args: { title: 'bug' } }] },
        { text: 'Filed: {{lastToolResult}}' },
      ],
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
    expect(new URL(started.url).pathname).toBe('/oauth/start');
    const { code, state, page, cookie } = await followConnectLink(h.app.http.port, started.url, fake, user);
    // The Connect page names whose chat account the sign-in is for, before anyone signs in.
    expect(page).toContain(`account ${person.userId}`);
    return callback({ code, state }, cookie);
  }

  function callback(query: { code: string; state: string }, cookie = '') {
    return returnToCallback(h.app.http.port, query, cookie);
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

  it('parks a call that needs the requester’s own connection, and goes on by itself once they connect', async () => {
    const before = fake.calls.length;
    const unconnected = await h.say('conv-bob', 'who am i', { requester: bob });
    expect((await h.settled(unconnected.id)).status).toBe('awaiting_approval');
    expect(fake.calls.length).toBe(before);
    // The card is shown by its own job, after the turn parked.
    await waitFor(
      async () =>
        [...h.outbound.messages.values()].some((m) =>
          m.text.includes('own tracker account, which is not connected yet'),
        )
          ? true
          : undefined,
      10_000,
      'the card naming the missing connection',
    );

    await connect(bob, 'bob');
    const continuation = await waitFor(
      async () => {
        const { rows } = await h.app.pool.query<{ id: string }>(
          `SELECT id FROM countersign.work_items WHERE conversation_id = 'conv-bob' AND id <> $1`,
          [unconnected.id],
        );
        return rows[0]?.id;
      },
      10_000,
      'the parked turn to go on',
    );
    expect((await h.settled(continuation)).result?.text).toBe('You are bob');
    const theirs = await h.say('conv-alice-2', 'who am i');
    expect((await h.settled(theirs.id)).result?.text).toBe('You are alice');
    expect(fake.calls.slice(before).map((c) => c.user)).toEqual(['bob', 'alice']);
    const audit = await h.app.pool.query<{ event: string }>(
      `SELECT event FROM countersign.approval_audit WHERE event IN ('connected', 'connection_used')`,
    );
    expect(new Set(audit.rows.map((r) => r.event))).toEqual(new Set(['connected', 'connection_used']));
  });

  it('“continue without it”: denying the waiting card tells the model the tool is unavailable', async () => {
    const erin = { platform: 'test', userId: 'U5' };
    const item = await h.say('conv-erin', 'who am i', { requester: erin });
    expect((await h.settled(item.id)).status).toBe('awaiting_approval');
    const { rows } = await h.app.pool.query<{ nonce: string; calls: string }>(
      `SELECT nonce, calls FROM countersign.approval_envelopes WHERE work_item_id = $1`,
      [item.id],
    );
    const [call] = JSON.parse(rows[0]!.calls) as Array<{ id: string }>;
    const denied = await h.app.approvals.submit(rows[0]!.nonce, [{ toolCallId: call!.id, approved: false }], erin);
    expect(denied.ok).toBe(true);
    const next = await waitFor(
      async () => {
        const found = await h.app.pool.query<{ id: string }>(
          `SELECT id FROM countersign.work_items WHERE conversation_id = 'conv-erin' AND id <> $1`,
          [item.id],
        );
        return found.rows[0]?.id;
      },
      10_000,
      'the continuation',
    );
    expect((await h.settled(next)).result?.text).toMatch(/denied|not run/);
    expect(await h.app.connections!.isConnected(erin, 'tracker')).toBe(false);
  });

  it('connecting is not approving: a write the policy asks about still waits for its click', async () => {
    const henry = { platform: 'test', userId: 'U8' };
    const item = await h.say('conv-henry', 'file an issue', { requester: henry });
    expect((await h.settled(item.id)).status).toBe('awaiting_approval');
    await connect(henry, 'henry');
    // The card stays: nothing ran, once whatever connecting set off is done.
    await jobsIdle(h.app.pool);
    const { rows } = await h.app.pool.query<{ status: string; nonce: string; calls: string }>(
      `SELECT status, nonce, calls FROM countersign.approval_envelopes WHERE work_item_id = $1`,
      [item.id],
    );
    expect(rows[0]?.status).toBe('pending');
    expect(fake.calls.some((c) => c.user === 'henry')).toBe(false);
    const [call] = JSON.parse(rows[0]!.calls) as Array<{ id: string }>;
    expect((await h.app.approvals.submit(rows[0]!.nonce, [{ toolCallId: call!.id, approved: true }], henry)).ok).toBe(
      true,
    );
    await waitFor(
      async () => (fake.calls.some((c) => c.user === 'henry' && c.tool === 'create_issue') ? true : undefined),
      10_000,
      'the issue filed as henry',
    );
  });

  it('refuses forged, replayed and expired states with a page that says so, and stores nothing', async () => {
    const carol = { platform: 'test', userId: 'U3' };
    expect((await callback({ code: 'x', state: 'A'.repeat(43) })).page).toContain('not a Connect link I made');
    const started = await h.app.connections!.start(carol, 'tracker');
    if (!started.ok) throw new Error(started.message);
    const { code, state } = await followConnectLink(h.app.http.port, started.url, fake, 'carol');
    await h.app.pool.query(`UPDATE countersign.oauth_states SET expires_at = now() - interval '1 second'`);
    const expired = await callback({ code, state: state ?? '' });
    expect(expired.status).toBe(400);
    expect(expired.page).toContain('expired');
    expect(await h.app.connections!.isConnected(carol, 'tracker')).toBe(false);
    // A second Connect after connecting says so instead of making a new link.
    const again = await h.app.connections!.start(alice, 'tracker');
    expect(again).toMatchObject({ ok: false });
    // A used link's Connect page says so and sends nobody on to sign in.
    const usedPage = await fetch(
      `http://127.0.0.1:${h.app.http.port}/oauth/start?s=${encodeURIComponent(new URL(started.url).searchParams.get('s')!)}`,
    );
    expect(usedPage.status).toBe(400);
    expect(await usedPage.text()).toContain('used already, has expired');
    // A replayed callback (the state used once already) is refused too.
    const fresh = await h.app.connections!.start(carol, 'tracker');
    if (!fresh.ok) throw new Error(fresh.message);
    const second = await followConnectLink(h.app.http.port, fresh.url, fake, 'carol');
    expect((await callback({ code: second.code, state: second.state }, second.cookie)).status).toBe(200);
    expect((await callback({ code: second.code, state: second.state }, second.cookie)).page).toContain('already used');
  });

  describe('a Connect link completes only in the browser that confirmed it (#47 §3)', () => {
    const mallory = { platform: 'test', userId: 'U9' };

    async function linkFor(person: { platform: string; userId: string }): Promise<string> {
      const started = await h.app.connections!.start(person, 'tracker');
      if (!started.ok) throw new Error(started.message);
      return new URL(started.url).searchParams.get('s')!;
    }

    it('refuses a sign-in URL passed on to someone else: nothing is stored, and the page says why', async () => {
      // Mallory confirms her own link herself and sends the sign-in URL it answers with to Alice.
      const s = await linkFor(mallory);
      const confirmed = await confirmOnConnectPage(h.app.http.port, s);
      expect(confirmed.status).toBe(303);
      const malloryJar = confirmed.headers
        .getSetCookie()
        .map((c) => c.split(';')[0]!)
        .join('; ');
      const tokenRequests = fake.tokenRequests.length;
      // Alice signs in; her browser, which never confirmed the link, comes back with her code.
      const { code, state } = await fake.approve(new URL(confirmed.headers.get('location')!), 'alice');
      const page = await callback({ code, state: state! });
      expect(page.status).toBe(400);
      expect(page.page).toContain('open the Connect link in this browser and confirm there');
      expect(await h.app.connections!.isConnected(mallory, 'tracker')).toBe(false);
      // The code was never exchanged, and the state is used up: Mallory cannot finish it either.
      expect(fake.tokenRequests.length).toBe(tokenRequests);
      const late = await callback({ code, state: state! }, malloryJar);
      expect(late.page).toContain('already used');
      expect(await h.app.connections!.isConnected(mallory, 'tracker')).toBe(false);
      const { rows } = await h.app.pool.query<{ detail: { reason?: string } }>(
        `SELECT detail FROM countersign.approval_audit WHERE event = 'connection_refused' AND actor->>'userId' = 'U9'`,
      );
      expect(rows.map((r) => r.detail.reason)).toContain('not the confirming browser');
    });

    it('refuses a forged cookie', async () => {
      const victim = await followConnectLink(
        h.app.http.port,
        `https://x.example/?s=${await linkFor(mallory)}`,
        fake,
        'alice',
      );
      const forged = victim.cookie.replace(/=.*$/, `=${'A'.repeat(43)}`);
      expect((await callback(victim, forged)).page).toContain('not confirmed in this browser');
      expect(await h.app.connections!.isConnected(mallory, 'tracker')).toBe(false);
    });

    it('refuses the cookie of an earlier confirmation once the link was confirmed again', async () => {
      const s = await linkFor(mallory);
      const first = await followConnectLink(h.app.http.port, `https://x.example/?s=${s}`, fake, 'alice');
      // Confirmed again (another browser): only that browser's cookie completes now.
      expect((await confirmOnConnectPage(h.app.http.port, s)).status).toBe(303);
      expect((await callback(first, first.cookie)).page).toContain('not confirmed in this browser');
      expect(await h.app.connections!.isConnected(mallory, 'tracker')).toBe(false);
    });

    it('refuses a confirmation posted from another site, setting no cookie', async () => {
      const s = await linkFor(mallory);
      for (const headers of [
        { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
        { origin: 'null' },
        { 'sec-fetch-site': 'same-site' },
      ] as Array<Record<string, string>>) {
        const posted = await confirmOnConnectPage(h.app.http.port, s, headers);
        expect(posted.status).toBe(403);
        expect(posted.headers.get('location')).toBeNull();
        expect(posted.headers.getSetCookie()).toEqual([]);
        expect(await posted.text()).toContain('Open the Connect link you were sent in the chat and confirm there');
      }
      const own = await confirmOnConnectPage(h.app.http.port, s, {
        origin: 'https://countersign.example.com',
        'sec-fetch-site': 'same-origin',
      });
      expect(own.status).toBe(303);
    });

    it('sets an HttpOnly, SameSite=Lax, Secure __Host- cookie, and the callback clears it', async () => {
      const ivan = { platform: 'test', userId: 'U10' };
      const s = await linkFor(ivan);
      const confirmed = await confirmOnConnectPage(h.app.http.port, s);
      const [set] = confirmed.headers.getSetCookie();
      expect(set).toMatch(
        /^__Host-countersign-connect-[0-9a-f]{16}=[\w-]{43}; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Lax; Secure$/,
      );
      const { code, state } = await fake.approve(new URL(confirmed.headers.get('location')!), 'ivan');
      const done = await callback({ code, state: state! }, set!.split(';')[0]!);
      expect(done.page).toContain('Connected to tracker');
      expect(done.setCookie).toEqual([`${set!.split('=')[0]}=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax; Secure`]);
      expect(await h.app.connections!.isConnected(ivan, 'tracker')).toBe(true);
    });
  });

  it('keeps tokens sealed at rest, and out of the listing people see', async () => {
    const { rows } = await h.app.pool.query(`SELECT * FROM countersign.connections`);
    expect(JSON.stringify(rows)).not.toMatch(/"access_token"|Bearer/);
    const { text } = await h.app.connections!.describe(alice);
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
    // Without the connection, the call waits for bob to connect again.
    const after = await h.say('conv-bob-3', 'who am i', { requester: bob });
    expect((await h.settled(after.id)).status).toBe('awaiting_approval');
  });
});

describe('per-person server configuration', () => {
  it('refuses a credential header on a per-person server: it would be sent instead of each person’s token', () => {
    expect(() =>
      parseMcpConfig(
        {
          mcpServers: {
            gh: { url: 'https://mcp.example.com/mcp', auth: 'oauth', headers: { authorization: 'Bearer shared' } },
          },
        },
        {},
      ),
    ).toThrow(/"auth": "oauth" runs each call with the requester's own token; remove the authorization header/);
  });

  it('needs TOKEN_ENCRYPTION_KEY of 32 bytes, and names the problem without the value', () => {
    expect(() => loadConfig({ TOKEN_ENCRYPTION_KEY: 'c2hvcnQ=' })).toThrow(
      /TOKEN_ENCRYPTION_KEY: .*decodes to 5 bytes/,
    );
    expect(() => loadConfig({ TOKEN_ENCRYPTION_KEY_PREVIOUS: randomBytes(32).toString('base64') })).toThrow(
      /TOKEN_ENCRYPTION_KEY: is missing/,
    );
  });
});

describe('a turn waiting for a connection across a restart', () => {
  it('loses nothing: the new process takes the callback and the turn goes on', async () => {
    const fake = await startFakeOAuthServer();
    const db = await createTestDatabase();
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-connections-restart-'));
    const mcp = path.join(dir, 'mcp.json');
    writeFileSync(mcp, JSON.stringify({ mcpServers: { tracker: { url: fake.mcpUrl, auth: 'oauth', trusted: true } } }));
    const env = {
      MCP_CONFIG: mcp,
      TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      PUBLIC_URL: 'https://countersign.example.com',
      // A restarted deployment keeps its workspace: an approval's scope names it.
      AGENT_WORKSPACE_ROOT: path.join(dir, 'workspace'),
    };
    const frank = { platform: 'test', userId: 'U6' };
    const grace = { platform: 'test', userId: 'U7' };
    try {
      const first = await startHarness({ script, env, db });
      // Grace connected earlier, so the server's tools are known.
      const started = await first.app.connections!.start(grace, 'tracker');
      if (!started.ok) throw new Error(started.message);
      const graceCode = await followConnectLink(first.app.http.port, started.url, fake, 'grace');
      expect(
        (await first.app.connections!.complete(graceCode.state, graceCode.code, graceCode.browserSecrets)).ok,
      ).toBe(true);
      const waiting = await first.say('conv-frank', 'who am i', { requester: frank });
      expect((await first.settled(waiting.id)).status).toBe('awaiting_approval');
      const link = await first.app.connections!.start(frank, 'tracker');
      await first.stop();

      const second = await startHarness({ script, env, db });
      try {
        if (!link.ok) throw new Error(link.message);
        const { code, state, cookie } = await followConnectLink(second.app.http.port, link.url, fake, 'frank');
        const res = await fetch(
          `http://127.0.0.1:${second.app.http.port}/oauth/callback?code=${encodeURIComponent(code)}&state=${encodeURIComponent(state)}`,
          { headers: { cookie } },
        );
        expect(res.status).toBe(200);
        const next = await waitFor(
          async () => {
            const { rows } = await second.app.pool.query<{ id: string }>(
              `SELECT id FROM countersign.work_items WHERE conversation_id = 'conv-frank' AND id <> $1`,
              [waiting.id],
            );
            return rows[0]?.id;
          },
          10_000,
          'the turn to go on',
        );
        expect((await second.settled(next)).result?.text).toBe('You are frank');
      } finally {
        await second.stop();
      }
    } finally {
      await db.drop();
      await fake.close();
    }
  });
});
