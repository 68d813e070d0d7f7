import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { InvalidGrantError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import {
  ClientRegistrationRaceError,
  ConnectionAuthProvider,
  type ConnectionAuthOptions,
} from '../../src/connections/oauth-provider.ts';
import {
  clientOf,
  connectionOf,
  consumeState,
  createState,
  deleteConnection,
  saveStateVerifier,
  type ConnectionPerson,
  type ConsumedState,
} from '../../src/connections/store.ts';
import { TokenSealer } from '../../src/connections/token-crypto.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startFakeOAuthServer, type FakeOAuthServer } from '../fakes/oauth/server.ts';

// Never fetched: the fake "browser" stops at the redirect and hands its code to the test.
const CALLBACK = 'https://countersign.example.com/oauth/callback';
const alice: ConnectionPerson = { platform: 'slack', userId: 'U0ALICE01', workspace: 'T0OPS0001' };
const bob: ConnectionPerson = { platform: 'discord', userId: '200000000000000001', workspace: '300000000000000001' };

describe('ConnectionAuthProvider with the SDK’s auth() against a real OAuth server', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let fake: FakeOAuthServer;
  const sealer = new TokenSealer(randomBytes(32).toString('base64'));

  const provider = (person: ConnectionPerson, extra: Partial<ConnectionAuthOptions> = {}) =>
    new ConnectionAuthProvider({
      db: pool,
      sealer,
      person,
      server: 'tracker',
      redirectUrl: CALLBACK,
      connectTtlSeconds: 600,
      ...extra,
    });

  /** Connect, then the person's browser, then the callback: what a turn parked on Connect goes through. */
  async function connect(person: ConnectionPerson, user: string, extra: Partial<ConnectionAuthOptions> = {}) {
    const workItemId = randomUUID();
    const start = provider(person, { workItemId, ...extra });
    expect(await auth(start, { serverUrl: fake.resourceUrl })).toBe('REDIRECT');
    const { code, state } = await fake.approve(start.authorizationUrl!, user);
    const consumed = await consumeState(pool, sealer, state!);
    if (!consumed.ok) throw new Error(`state refused: ${consumed.reason}`);
    expect(consumed.state.workItemId).toBe(workItemId);
    const callback = provider(person, { consumed: consumed.state, ...extra });
    expect(await auth(callback, { serverUrl: fake.resourceUrl, authorizationCode: code })).toBe('AUTHORIZED');
    return { start, callback, state: state!, code };
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    await migrate(db.url, createLogger('silent'));
    pool = createPool(db.url, 4);
    fake = await startFakeOAuthServer();
  });

  afterAll(async () => {
    await fake?.close();
    await pool?.end();
    await db?.drop();
  });

  it('sends the person to authorize with PKCE and a state bound to them, opening no browser', async () => {
    const workItemId = randomUUID();
    const start = provider(alice, { workItemId });
    expect(await auth(start, { serverUrl: fake.resourceUrl })).toBe('REDIRECT');

    const url = start.authorizationUrl!;
    expect(url.origin + url.pathname).toBe(`${fake.url}/authorize`);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('redirect_uri')).toBe(CALLBACK);
    const state = url.searchParams.get('state')!;
    const { rows } = await pool.query(
      `SELECT platform, user_id, workspace, server, work_item_id FROM countersign.oauth_states`,
    );
    expect(rows).toEqual([
      {
        platform: 'slack',
        user_id: alice.userId,
        workspace: alice.workspace,
        server: 'tracker',
        work_item_id: workItemId,
      },
    ]);
    expect(JSON.stringify(rows)).not.toContain(state);
    expect(fake.registrations).toHaveLength(1);
  });

  it('stores the person’s own tokens at the callback, sealed, and registers only once', async () => {
    await connect(alice, 'alice');
    await connect(bob, 'bob');
    expect(fake.registrations).toHaveLength(1);

    const aliceTokens = (await connectionOf(pool, sealer, alice, 'tracker'))!.tokens;
    const bobTokens = (await connectionOf(pool, sealer, bob, 'tracker'))!.tokens;
    expect(aliceTokens.issuer).toBe(`${fake.url}/`);
    expect(await fake.whoami(aliceTokens.access_token)).toBe('alice');
    expect(await fake.whoami(bobTokens.access_token)).toBe('bob');

    const { rows } = await pool.query(
      `SELECT (SELECT string_agg(row_to_json(c)::text, '') FROM countersign.connections c) ||
              (SELECT string_agg(row_to_json(o)::text, '') FROM countersign.oauth_clients o) ||
              (SELECT string_agg(row_to_json(s)::text, '') FROM countersign.oauth_states s) AS everything`,
    );
    const everything = rows[0].everything as string;
    for (const secret of [aliceTokens.access_token, aliceTokens.refresh_token!, bobTokens.access_token]) {
      expect(everything).not.toContain(secret);
    }
    expect(everything).not.toContain(fake.registrations[0]!.client_secret!);
  });

  it('refreshes with the stored refresh token from a new provider, as after a restart', async () => {
    const before = (await connectionOf(pool, sealer, alice, 'tracker'))!;
    const requests = fake.tokenRequests.length;
    expect(await auth(provider(alice), { serverUrl: fake.resourceUrl })).toBe('AUTHORIZED');

    expect(fake.tokenRequests.slice(requests)).toEqual([
      { grant: 'refresh_token', clientId: fake.registrations[0]!.client_id, ok: true },
    ]);
    const after = (await connectionOf(pool, sealer, alice, 'tracker'))!;
    expect(after.tokens.access_token).not.toBe(before.tokens.access_token);
    expect(after.connectedAt).toEqual(before.connectedAt);
    expect(await fake.whoami(after.tokens.access_token)).toBe('alice');
    expect(fake.registrations).toHaveLength(1);
  });

  it('drops the connection when the refresh is answered invalid_grant, and asks again', async () => {
    fake.revokeRefreshTokens('alice');
    const again = provider(alice);
    expect(await auth(again, { serverUrl: fake.resourceUrl })).toBe('REDIRECT');
    expect(again.invalidated).toEqual(['tokens']);
    expect(again.authorizationUrl).toBeDefined();
    expect(await connectionOf(pool, sealer, alice, 'tracker')).toBeUndefined();
    expect(await connectionOf(pool, sealer, bob, 'tracker')).toBeDefined();
  });

  it('keeps the stored connection when a callback brings a code that was already used', async () => {
    const { code } = await connect(alice, 'alice');
    const raw = await createState(pool, { person: alice, server: 'tracker', ttlSeconds: 600 });
    await saveStateVerifier(pool, sealer, raw, 'a'.repeat(43));
    const consumed = (await consumeState(pool, sealer, raw)) as { ok: true; state: ConsumedState };
    const late = provider(alice, { consumed: consumed.state });

    await expect(auth(late, { serverUrl: fake.resourceUrl, authorizationCode: code })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
    expect(await connectionOf(pool, sealer, alice, 'tracker')).toBeDefined();
  });

  it('keeps one registration when two people connect to a server for the first time at once', async () => {
    const first = provider(alice, { server: 'wiki' });
    const second = provider(bob, { server: 'wiki' });
    expect(await first.clientInformation()).toBeUndefined(); // both look before either registers
    expect(await auth(second, { serverUrl: fake.resourceUrl })).toBe('REDIRECT');
    const kept = await clientOf(pool, sealer, 'wiki');

    await expect(first.saveClientInformation!({ client_id: 'late', redirect_uris: [CALLBACK] })).rejects.toBeInstanceOf(
      ClientRegistrationRaceError,
    );
    expect(await clientOf(pool, sealer, 'wiki')).toEqual(kept);
    // Trying again finds the kept registration and uses it.
    const retry = provider(alice, { server: 'wiki' });
    expect(await auth(retry, { serverUrl: fake.resourceUrl })).toBe('REDIRECT');
    expect(retry.authorizationUrl!.searchParams.get('client_id')).toBe(kept?.client_id);
  });

  it('refuses a callback state made for another person or server', async () => {
    const raw = await createState(pool, { person: alice, server: 'tracker', ttlSeconds: 600 });
    await saveStateVerifier(pool, sealer, raw, 'b'.repeat(43));
    const consumed = (await consumeState(pool, sealer, raw)) as { ok: true; state: ConsumedState };
    expect(() => provider(bob, { consumed: consumed.state })).toThrow(/another person/);
    expect(() => provider(alice, { consumed: consumed.state, server: 'wiki' })).toThrow(/another server/);
  });

  it('registers again, replacing the stored registration, when the callback URL changed', async () => {
    const old = await clientOf(pool, sealer, 'tracker');
    const registered = fake.registrations.length;
    const moved = 'https://bot.elsewhere.example.com/oauth/callback';
    // Someone not yet connected, so auth() must send them to authorize with the new callback.
    const carol = provider({ platform: 'slack', userId: 'U0CAROL01', workspace: 'T0OPS0001' }, { redirectUrl: moved });
    expect(await auth(carol, { serverUrl: fake.resourceUrl })).toBe('REDIRECT');
    expect(fake.registrations).toHaveLength(registered + 1);
    const stored = await clientOf(pool, sealer, 'tracker');
    expect(stored?.client_id).not.toBe(old?.client_id);
    expect(stored && 'redirect_uris' in stored && stored.redirect_uris).toEqual([moved]);
    expect(carol.authorizationUrl!.searchParams.get('client_id')).toBe(stored?.client_id);
  });

  it('keeps a connection a concurrent refresh renewed, and a refresh never brings back a removed one', async () => {
    const carol: ConnectionPerson = { platform: 'slack', userId: 'U0CAROL01', workspace: 'T0OPS0001' };
    await connect(carol, 'carol');
    // Two requests of carol's read the same tokens; the first renews them, the second's refresh is refused.
    const first = provider(carol);
    const second = provider(carol);
    const read = await first.tokens();
    await second.tokens();
    await first.saveTokens({ ...read!, access_token: 'renewed', refresh_token: 'renewed-refresh' });
    await second.invalidateCredentials('tokens');
    expect((await connectionOf(pool, sealer, carol, 'tracker'))?.tokens.refresh_token).toBe('renewed-refresh');
    // Carol disconnects while a refresh is in flight: its save does not bring the connection back.
    await deleteConnection(pool, carol, 'tracker');
    await first.saveTokens({ ...read!, access_token: 'late', refresh_token: 'late-refresh' });
    expect(await connectionOf(pool, sealer, carol, 'tracker')).toBeUndefined();
  });
});

describe('a pre-registered client', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let fake: FakeOAuthServer;
  const sealer = new TokenSealer(randomBytes(32).toString('base64'));
  const clientSecret = randomBytes(16).toString('hex');

  beforeAll(async () => {
    db = await createTestDatabase();
    await migrate(db.url, createLogger('silent'));
    pool = createPool(db.url, 4);
    fake = await startFakeOAuthServer({
      clients: [{ client_id: 'countersign-app', client_secret: clientSecret, redirect_uris: [CALLBACK] }],
    });
  });

  afterAll(async () => {
    await fake?.close();
    await pool?.end();
    await db?.drop();
  });

  it('is used as configured: no registration, nothing stored about it, tokens for the person', async () => {
    const options = {
      db: pool,
      sealer,
      person: alice,
      server: 'tracker',
      redirectUrl: CALLBACK,
      connectTtlSeconds: 600,
      preregistered: { clientId: 'countersign-app', clientSecret },
    };
    const start = new ConnectionAuthProvider(options);
    expect(await auth(start, { serverUrl: fake.resourceUrl })).toBe('REDIRECT');
    expect(start.authorizationUrl!.searchParams.get('client_id')).toBe('countersign-app');

    const { code, state } = await fake.approve(start.authorizationUrl!, 'alice');
    const consumed = (await consumeState(pool, sealer, state!)) as { ok: true; state: ConsumedState };
    const callback = new ConnectionAuthProvider({ ...options, consumed: consumed.state });
    expect(await auth(callback, { serverUrl: fake.resourceUrl, authorizationCode: code })).toBe('AUTHORIZED');

    expect(fake.registrations).toHaveLength(0);
    expect((await pool.query(`SELECT 1 FROM countersign.oauth_clients`)).rowCount).toBe(0);
    const tokens = (await connectionOf(pool, sealer, alice, 'tracker'))!.tokens;
    expect(await fake.whoami(tokens.access_token)).toBe('alice');
    expect(fake.tokenRequests).toEqual([{ grant: 'authorization_code', clientId: 'countersign-app', ok: true }]);
  });
});
