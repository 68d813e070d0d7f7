import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ConnectionAuthProvider } from '../../../src/connections/oauth-provider.ts';
import { connectionOf, consumeState, type ConnectionPerson } from '../../../src/connections/store.ts';
import { TokenSealer } from '../../../src/connections/token-crypto.ts';
import { migrate } from '../../../src/db/migrate.ts';
import { createPool } from '../../../src/db/pool.ts';
import { createLogger } from '../../../src/log.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startFakeOAuthServer, type FakeOAuthServer } from './server.ts';

// Never fetched: the fake "browser" stops at the redirect and hands its code to the test.
const CALLBACK = 'https://countersign.example.com/oauth/callback';
const alice: ConnectionPerson = { platform: 'slack', userId: 'U0ALICE01', workspace: 'T0OPS0001' };
const bob: ConnectionPerson = { platform: 'discord', userId: '200000000000000001', workspace: '300000000000000001' };
const carol: ConnectionPerson = { platform: 'slack', userId: 'U0CAROL01', workspace: 'T0OPS0001' };

const textOf = (result: Awaited<ReturnType<Client['callTool']>>) =>
  (result.content as { type: string; text?: string }[]).map((part) => part.text ?? '').join('');

describe('the fake OAuth server’s protected MCP server, reached by the SDK client', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let fake: FakeOAuthServer;
  const sealer = new TokenSealer(randomBytes(32).toString('base64'));
  const open: Client[] = [];

  const provider = (
    person: ConnectionPerson,
    extra: Partial<ConstructorParameters<typeof ConnectionAuthProvider>[0]> = {},
  ) =>
    new ConnectionAuthProvider({
      db: pool,
      sealer,
      person,
      server: 'tracker',
      redirectUrl: CALLBACK,
      connectTtlSeconds: 600,
      ...extra,
    });

  function clientFor(authProvider: ConnectionAuthProvider): {
    client: Client;
    transport: StreamableHTTPClientTransport;
  } {
    const client = new Client({ name: 'countersign-test', version: '1.0.0' });
    open.push(client);
    return { client, transport: new StreamableHTTPClientTransport(new URL(fake.mcpUrl), { authProvider }) };
  }

  /** The MCP client is refused, and its own auth() leaves the Connect URL on the provider. */
  async function refusedConnect(person: ConnectionPerson): Promise<URL> {
    const start = provider(person, { workItemId: randomUUID() });
    const { client, transport } = clientFor(start);
    await expect(client.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(start.authorizationUrl).toBeDefined();
    return start.authorizationUrl!;
  }

  /** The person's browser approves as `user`, then the callback finishes the authorization. */
  async function callback(person: ConnectionPerson, authorizationUrl: URL, user: string, fetchFn?: FetchLike) {
    const { code, state } = await fake.approve(authorizationUrl, user);
    const consumed = await consumeState(pool, sealer, state!);
    if (!consumed.ok) throw new Error(`state refused: ${consumed.reason}`);
    return auth(provider(person, { consumed: consumed.state }), {
      serverUrl: fake.mcpUrl,
      authorizationCode: code,
      ...(fetchFn ? { fetchFn } : {}),
    });
  }

  async function connected(person: ConnectionPerson): Promise<Client> {
    const { client, transport } = clientFor(provider(person));
    await client.connect(transport);
    return client;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    await migrate(db.url, createLogger('silent'));
    pool = createPool(db.url, 4);
    fake = await startFakeOAuthServer();
  });

  afterAll(async () => {
    await Promise.allSettled(open.map((client) => client.close()));
    await fake?.close();
    await pool?.end();
    await db?.drop();
  });

  it('answers an unauthenticated request 401 with the protected-resource metadata URL, as the spec says', async () => {
    const res = await fetch(fake.mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    const metadataUrl = `${fake.url}/.well-known/oauth-protected-resource/mcp`;
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(res.headers.get('www-authenticate')).toContain(`resource_metadata="${metadataUrl}"`);

    const metadata = (await (await fetch(metadataUrl)).json()) as Record<string, unknown>;
    expect(metadata.resource).toBe(fake.mcpUrl);
    expect(metadata.authorization_servers).toEqual([`${fake.url}/`]);
    expect(fake.calls).toEqual([]);
  });

  it('refuses the client without a connection, then lets it call whoami as alice after the callback', async () => {
    const authorizationUrl = await refusedConnect(alice);
    expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${fake.url}/authorize`);
    expect(authorizationUrl.searchParams.get('resource')).toBe(fake.mcpUrl);
    expect(fake.calls).toEqual([]);

    expect(await callback(alice, authorizationUrl, 'alice')).toBe('AUTHORIZED');
    const client = await connected(alice);
    const { tools } = await client.listTools();
    expect(Object.fromEntries(tools.map((tool) => [tool.name, tool.annotations?.readOnlyHint]))).toEqual({
      whoami: true,
      create_issue: false,
    });
    expect(textOf(await client.callTool({ name: 'whoami', arguments: {} }))).toBe('alice');
    expect(fake.calls).toEqual([{ user: 'alice', tool: 'whoami', args: {} }]);
  });

  it('gives a second person their own identity at the same server', async () => {
    expect(await callback(bob, await refusedConnect(bob), 'bob')).toBe('AUTHORIZED');
    const asBob = await connected(bob);
    const asAlice = await connected(alice);
    const before = fake.calls.length;

    expect(textOf(await asBob.callTool({ name: 'whoami', arguments: {} }))).toBe('bob');
    expect(textOf(await asBob.callTool({ name: 'create_issue', arguments: { title: 'Disk full' } }))).toBe(
      'created Disk full as bob',
    );
    expect(textOf(await asAlice.callTool({ name: 'create_issue', arguments: { title: 'Flaky CI' } }))).toBe(
      'created Flaky CI as alice',
    );
    expect(fake.calls.slice(before)).toEqual([
      { user: 'bob', tool: 'whoami', args: {} },
      { user: 'bob', tool: 'create_issue', args: { title: 'Disk full' } },
      { user: 'alice', tool: 'create_issue', args: { title: 'Flaky CI' } },
    ]);
  });

  it('holds a token request without answering while hangTokenEndpoint is on', async () => {
    const authorizationUrl = await refusedConnect(carol);
    const requests = fake.tokenRequests.length;
    const gaveUp: FetchLike = (url, init) => fetch(url, { ...init, signal: AbortSignal.timeout(300) });
    fake.hangTokenEndpoint = true;
    try {
      await expect(callback(carol, authorizationUrl, 'carol', gaveUp)).rejects.toThrow(/timeout|aborted/i);
    } finally {
      fake.hangTokenEndpoint = false;
    }
    expect(fake.tokenRequests.slice(requests)).toEqual([
      { grant: 'authorization_code', clientId: fake.registrations[0]!.client_id, ok: false, fault: 'hang' },
    ]);
    expect(await connectionOf(pool, sealer, carol, 'tracker')).toBeUndefined();
  });

  it('answers a token request with a body that is not JSON while garbageTokens is on', async () => {
    const authorizationUrl = await refusedConnect(carol);
    const requests = fake.tokenRequests.length;
    fake.garbageTokens = true;
    try {
      await expect(callback(carol, authorizationUrl, 'carol')).rejects.toThrow(/not valid JSON/);
    } finally {
      fake.garbageTokens = false;
    }
    expect(fake.tokenRequests.slice(requests)).toEqual([
      { grant: 'authorization_code', clientId: fake.registrations[0]!.client_id, ok: false, fault: 'garbage' },
    ]);
    expect(await connectionOf(pool, sealer, carol, 'tracker')).toBeUndefined();

    // Switched off, the same person connects normally.
    expect(await callback(carol, await refusedConnect(carol), 'carol')).toBe('AUTHORIZED');
    expect(textOf(await (await connected(carol)).callTool({ name: 'whoami', arguments: {} }))).toBe('carol');
  });
});
