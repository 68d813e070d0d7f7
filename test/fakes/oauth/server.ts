import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import { InvalidGrantError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import { getOAuthProtectedResourceMetadataUrl, mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { z } from 'zod';

/**
 * A real OAuth 2.1 authorization server on 127.0.0.1, built from the MCP SDK's server-side auth
 * (metadata, dynamic registration, authorize with PKCE, token, revocation), in front of the
 * resource it protects: a Streamable HTTP MCP server at `/mcp` whose tools act as the person the
 * bearer token was issued to, and `/whoami` (answers whose token it was). Unauthenticated, `/mcp`
 * answers 401 with `WWW-Authenticate: Bearer … resource_metadata="…"`, as the MCP authorization
 * spec says, so the SDK client discovers everything from there. Sign-in is simulated: the "browser"
 * says who it is with the `x-fake-user` header, and the server approves at once. Refresh tokens
 * rotate.
 */

type Grant = 'authorization_code' | 'refresh_token';
type TokenFault = 'hang' | 'garbage';

interface TokenRequest {
  grant: Grant;
  clientId: string;
  ok: boolean;
  /** Set when a fault switch answered it instead of the authorization server. */
  fault?: TokenFault;
}

interface ToolCall {
  /** Whose token the call came with. */
  user: string;
  tool: 'whoami' | 'create_issue';
  args: Record<string, unknown>;
}

export interface FakeOAuthServer {
  url: string;
  /** The protected MCP server (`${url}/mcp`): what the SDK's `auth()` and the client transport are given. */
  mcpUrl: string;
  /** The same as `mcpUrl`. */
  resourceUrl: string;
  /** Dynamic registrations received. */
  registrations: OAuthClientInformationFull[];
  /** Token requests answered (or refused), in order. */
  tokenRequests: TokenRequest[];
  /** Every tool call the MCP server ran, with the user of the token it came with, in order. */
  calls: ToolCall[];
  /** While true, the token endpoint reads a request and never answers it. */
  hangTokenEndpoint: boolean;
  /** While true, the token endpoint answers 200 with a body that is not JSON. */
  garbageTokens: boolean;
  /** Follows an authorization URL as the signed-in `user`'s browser would; returns where it was sent back. */
  approve(authorizationUrl: URL, user?: string): Promise<{ code: string; state: string | null; redirect: URL }>;
  /** Revokes every refresh token (of one user): their next refresh is answered invalid_grant. */
  revokeRefreshTokens(user?: string): void;
  /** Whose access token this is, by asking the protected endpoint; undefined when it is refused. */
  whoami(accessToken: string): Promise<string | undefined>;
  close(): Promise<void>;
}

export interface FakeOAuthOptions {
  accessTokenSeconds?: number;
  /** Pre-registered clients (GitHub style), by id. */
  clients?: OAuthClientInformationFull[];
}

// Express's types, reached through the SDK, which depends on it (Countersign does not).
type Response = Parameters<OAuthServerProvider['authorize']>[2];
type App = ReturnType<typeof createMcpExpressApp>;

interface TokenGrant {
  clientId: string;
  user: string;
  resource?: string;
}

class FakeAuthority implements OAuthServerProvider {
  readonly clients = new Map<string, OAuthClientInformationFull>();
  readonly codes = new Map<string, TokenGrant & { challenge: string; redirectUri: string }>();
  readonly accessTokens = new Map<string, TokenGrant & { expiresAt: number }>();
  readonly refreshTokens = new Map<string, TokenGrant>();
  readonly registrations: OAuthClientInformationFull[] = [];
  readonly tokenRequests: TokenRequest[] = [];
  readonly accessTokenSeconds: number;
  constructor(accessTokenSeconds: number) {
    this.accessTokenSeconds = accessTokenSeconds;
  }

  get clientsStore(): OAuthRegisteredClientsStore {
    return {
      getClient: (id) => this.clients.get(id),
      registerClient: (client) => {
        const full = { ...client, client_id: randomUUID() } as OAuthClientInformationFull;
        this.clients.set(full.client_id, full);
        this.registrations.push(full);
        return full;
      },
    };
  }

  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: Response): Promise<void> {
    const user = res.req.header('x-fake-user') ?? 'alice';
    const code = randomBytes(16).toString('hex');
    this.codes.set(code, {
      clientId: client.client_id,
      user,
      challenge: params.codeChallenge,
      redirectUri: params.redirectUri,
      ...(params.resource ? { resource: params.resource.href } : {}),
    });
    const back = new URL(params.redirectUri);
    back.searchParams.set('code', code);
    if (params.state !== undefined) back.searchParams.set('state', params.state);
    res.redirect(302, back.href);
  }

  async challengeForAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<string> {
    const grant = this.codes.get(code);
    if (!grant || grant.clientId !== client.client_id) throw new InvalidGrantError('Unknown authorization code');
    return grant.challenge;
  }

  async exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<OAuthTokens> {
    const grant = this.codes.get(code);
    this.codes.delete(code); // single use
    const ok = grant !== undefined && grant.clientId === client.client_id;
    this.tokenRequests.push({ grant: 'authorization_code', clientId: client.client_id, ok });
    if (!ok) throw new InvalidGrantError('Unknown authorization code');
    return this.issue(grant);
  }

  async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string): Promise<OAuthTokens> {
    const grant = this.refreshTokens.get(refreshToken);
    this.refreshTokens.delete(refreshToken); // rotation: a refresh token works once
    const ok = grant !== undefined && grant.clientId === client.client_id;
    this.tokenRequests.push({ grant: 'refresh_token', clientId: client.client_id, ok });
    if (!ok) throw new InvalidGrantError('Refresh token is invalid or revoked');
    return this.issue(grant);
  }

  issue(grant: TokenGrant): OAuthTokens {
    const { clientId, user, resource } = grant;
    const access = `at_${user}_${randomBytes(12).toString('hex')}`;
    const refresh = `rt_${user}_${randomBytes(12).toString('hex')}`;
    const expiresAt = Math.floor(Date.now() / 1000) + this.accessTokenSeconds;
    this.accessTokens.set(access, { clientId, user, expiresAt, ...(resource ? { resource } : {}) });
    this.refreshTokens.set(refresh, { clientId, user, ...(resource ? { resource } : {}) });
    return { access_token: access, token_type: 'Bearer', expires_in: this.accessTokenSeconds, refresh_token: refresh };
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const found = this.accessTokens.get(token);
    if (!found) throw new InvalidTokenError('Unknown access token');
    return {
      token,
      clientId: found.clientId,
      scopes: [],
      expiresAt: found.expiresAt,
      ...(found.resource ? { resource: new URL(found.resource) } : {}),
      extra: { user: found.user },
    };
  }

  async revokeToken(_client: OAuthClientInformationFull, request: { token: string }): Promise<void> {
    this.accessTokens.delete(request.token);
    this.refreshTokens.delete(request.token);
  }
}

/** The signed-in user of the call's bearer token, as `requireBearerAuth` verified it. */
function userOf(authInfo: AuthInfo | undefined): string {
  const user = authInfo?.extra?.user;
  if (typeof user !== 'string') throw new Error('A tool ran without a verified bearer token');
  return user;
}

/** The MCP tools: each acts as the token's user, never as anyone configured in the server. */
function protectedMcp(calls: ToolCall[]): McpServer {
  const mcp = new McpServer({ name: 'fake-oauth-tracker', version: '1.0.0' });
  mcp.registerTool(
    'whoami',
    {
      description: 'The signed-in user of this connection',
      inputSchema: {},
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (_args, extra) => {
      const user = userOf(extra.authInfo);
      calls.push({ user, tool: 'whoami', args: {} });
      return { content: [{ type: 'text', text: user }] };
    },
  );
  mcp.registerTool(
    'create_issue',
    {
      description: 'Opens an issue in the tracker as the signed-in user',
      inputSchema: { title: z.string().min(1) },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async ({ title }, extra) => {
      const user = userOf(extra.authInfo);
      calls.push({ user, tool: 'create_issue', args: { title } });
      return { content: [{ type: 'text', text: `created ${title} as ${user}` }] };
    },
  );
  return mcp;
}

async function listen(app: App): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server));
    server.once('error', reject);
  });
}

/** The form body of a token request, read here because a faulted request never reaches the SDK's parser. */
async function tokenRequestOf(req: IncomingMessage): Promise<Omit<TokenRequest, 'ok' | 'fault'>> {
  let raw = '';
  for await (const chunk of req) raw += String(chunk);
  const form = new URLSearchParams(raw);
  const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
  const basicId = basic ? decodeURIComponent(Buffer.from(basic, 'base64').toString().split(':')[0] ?? '') : '';
  const grant = form.get('grant_type') === 'refresh_token' ? 'refresh_token' : 'authorization_code';
  return { grant, clientId: form.get('client_id') ?? basicId };
}

export async function startFakeOAuthServer(options: FakeOAuthOptions = {}): Promise<FakeOAuthServer> {
  const authority = new FakeAuthority(options.accessTokenSeconds ?? 3600);
  for (const client of options.clients ?? []) authority.clients.set(client.client_id, client);
  const app = createMcpExpressApp({ host: '127.0.0.1' });
  // The issuer needs the port, known only once listening: mount the routes then.
  const server = await listen(app);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mcpUrl = `${url}/mcp`;

  const fake: FakeOAuthServer = {
    url,
    mcpUrl,
    resourceUrl: mcpUrl,
    registrations: authority.registrations,
    tokenRequests: authority.tokenRequests,
    calls: [],
    hangTokenEndpoint: false,
    garbageTokens: false,
    async approve(authorizationUrl, user = 'alice') {
      const res = await fetch(authorizationUrl, { redirect: 'manual', headers: { 'x-fake-user': user } });
      const location = res.headers.get('location');
      if (res.status !== 302 || !location) throw new Error(`Authorization refused: ${res.status} ${await res.text()}`);
      const redirect = new URL(location);
      const code = redirect.searchParams.get('code');
      if (!code) throw new Error(`Authorization answered without a code: ${location}`);
      return { code, state: redirect.searchParams.get('state'), redirect };
    },
    revokeRefreshTokens(user) {
      for (const [token, grant] of authority.refreshTokens) {
        if (user === undefined || grant.user === user) authority.refreshTokens.delete(token);
      }
    },
    async whoami(accessToken) {
      const res = await fetch(`${url}/whoami`, { headers: { authorization: `Bearer ${accessToken}` } });
      if (!res.ok) return undefined;
      return ((await res.json()) as { user?: string }).user;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections(); // also ends requests the hanging token endpoint holds
        server.close(() => resolve());
      }),
  };

  // Ahead of the SDK's token handler, so a switched-on fault answers instead of it.
  app.post('/token', (req, res, next) => {
    const fault: TokenFault | undefined = fake.hangTokenEndpoint ? 'hang' : fake.garbageTokens ? 'garbage' : undefined;
    if (!fault) {
      next();
      return;
    }
    void tokenRequestOf(req).then((request) => {
      fake.tokenRequests.push({ ...request, ok: false, fault });
      if (fault === 'garbage') res.status(200).type('text/html').send('<html><body>Bad Gateway</body></html>');
    });
  });

  const noLimit = { rateLimit: false } as const;
  app.use(
    mcpAuthRouter({
      provider: authority,
      issuerUrl: new URL(url),
      resourceServerUrl: new URL(mcpUrl),
      resourceName: 'Fake tracker',
      authorizationOptions: noLimit,
      clientRegistrationOptions: noLimit,
      tokenOptions: noLimit,
      revocationOptions: noLimit,
    }),
  );

  app.get('/whoami', requireBearerAuth({ verifier: authority }), (req, res) => {
    res.json({ user: req.auth?.extra?.user });
  });

  const bearer = requireBearerAuth({
    verifier: authority,
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(new URL(mcpUrl)),
    // Audience binding (RFC 8707): a token issued for another resource is refused here.
    expectedResource: new URL(mcpUrl),
  });
  // Stateless: a fresh server and transport per request, so every request is judged by its own token.
  app.all('/mcp', bearer, async (req, res) => {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const mcp = protectedMcp(fake.calls);
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });

  return fake;
}
