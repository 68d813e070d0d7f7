import path from 'node:path';
import type { Logger } from 'pino';
import { ConfigError, type Config } from '../config.ts';
import type { Pool } from '../db/pool.ts';
import { loadMcpConfig } from '../agent/tools/mcp/config.ts';
import { CONNECT_TOOL, namespacedName, type PersonalAuth } from '../agent/tools/mcp/hub.ts';
import { audit } from '../approval/store.ts';
import { CALLBACK_PATH, PersonalConnections, START_PATH, type PersonalServer } from '../connections/service.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { anyConnectionTo, touchConnection } from '../connections/store.ts';
import { TokenSealer } from '../connections/token-crypto.ts';
import type { HttpServer } from '../http/server.ts';
import { callbackPage, startPage } from '../connections/callback-page.ts';
import {
  clearConnectCookie,
  connectCookieName,
  cookieValues,
  sameOriginPost,
  setConnectCookie,
} from '../connections/browser-binding.ts';
import type { WorkItem } from '../core/work-item.ts';
import type { PlatformDirectory } from '../core/platform-rules.ts';
import type { ToolRegistry } from '../agent/tools/registry.ts';
import type { OutboundRegistry } from '../reply/outbound.ts';
import type { ConnectionGate } from '../approval/connections.ts';
import type { ApprovalService } from '../approval/service.ts';
import { continueWithoutValue } from '../core/buttons.ts';

/**
 * Per-person MCP servers (`"auth": "oauth"` in MCP_CONFIG, docs/connections.md): undefined when
 * there are none. With any, TOKEN_ENCRYPTION_KEY and PUBLIC_URL must be set: start-up stops
 * naming what is missing.
 */
export function openConnections(
  config: Config,
  log: Logger,
  pool: Pool,
  platforms: PlatformDirectory,
): PersonalConnections | undefined {
  if (!config.MCP_CONFIG) return undefined;
  const mcp = loadMcpConfig(path.resolve(process.cwd(), config.MCP_CONFIG));
  const servers: PersonalServer[] = Object.entries(mcp.mcpServers).flatMap(([name, server]) =>
    'url' in server && server.auth === 'oauth' && !server.disabled
      ? [
          {
            name,
            url: server.url,
            ...(server.clientId ? { clientId: server.clientId } : {}),
            ...(server.clientSecret ? { clientSecret: server.clientSecret } : {}),
            ...(server.scope ? { scope: server.scope } : {}),
          },
        ]
      : [],
  );
  if (servers.length === 0) return undefined;
  const names = servers.map((s) => s.name).join(', ');
  const problems = [
    ...(config.TOKEN_ENCRYPTION_KEY
      ? []
      : [
          `TOKEN_ENCRYPTION_KEY: is missing: MCP_CONFIG has per-person servers ("auth": "oauth": ${names}), whose tokens are sealed with it`,
        ]),
    ...(config.PUBLIC_URL
      ? []
      : [`PUBLIC_URL: is missing: per-person servers (${names}) send people back to \${PUBLIC_URL}${CALLBACK_PATH}`]),
  ];
  if (problems.length) throw new ConfigError(problems);
  return new PersonalConnections({
    db: pool,
    sealer: new TokenSealer(config.TOKEN_ENCRYPTION_KEY!, config.TOKEN_ENCRYPTION_KEY_PREVIOUS),
    publicUrl: config.PUBLIC_URL!,
    ttlSeconds: config.CONNECT_TTL_SECONDS,
    servers,
    log,
    record: (event, person, detail) => audit(pool, { event, actor: person, detail }),
    labelOf: (person) => {
      const chat = platforms.has(person.platform) ? platforms.rulesOf(person.platform).displayName : person.platform;
      const name = person.displayName ? `${person.displayName}, ` : '';
      return `${name}${chat} account ${person.userId}${person.workspace ? ` in workspace ${person.workspace}` : ''}`;
    },
  });
}

/** Form bodies the Connect page posts are a state and nothing else. */
const FORM_BYTES = 4096;

function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
      if (body.length > FORM_BYTES) req.destroy(new Error('form too large'));
    });
    req.on('end', () => resolve(new URLSearchParams(body)));
    req.on('error', reject);
  });
}

/**
 * `/oauth/start`: where a Connect link leads first. GET shows whose chat account the sign-in will be
 * attached to ("not you? close this page") with a button; only its POST sends the browser on to
 * the sign-in. Someone sent another person's link sees it is not theirs before signing in. The POST
 * also binds the link to this browser (a cookie the callback must bring back), so a sign-in URL
 * passed on to someone else connects no one; it is refused unless it came from this page.
 */
function routeStartPage(http: HttpServer, connections: PersonalConnections): void {
  http.route(START_PATH, async (req, res) => {
    if (req.method === 'POST') {
      const state = (await readForm(req).catch(() => new URLSearchParams())).get('s') ?? '';
      if (!sameOriginPost(req.headers, connections.publicOrigin)) {
        sendPage(res, startPage(undefined, state, 'another-site'));
        return;
      }
      const confirmed = state ? await connections.confirm(state) : undefined;
      if (confirmed) {
        const secure = connections.secureCookies;
        res.writeHead(303, {
          location: confirmed.authorizationUrl,
          'set-cookie': setConnectCookie(
            connectCookieName(state, secure),
            confirmed.browserSecret,
            confirmed.secondsLeft,
            secure,
          ),
          'cache-control': 'no-store',
          'referrer-policy': 'no-referrer',
        });
        res.end();
        return;
      }
      sendPage(res, startPage(undefined, state));
      return;
    }
    const state = new URL(req.url ?? '/', 'http://localhost').searchParams.get('s') ?? '';
    const link = state ? await connections.linkOf(state) : undefined;
    // The form posts back here and is then sent on to the sign-in: both are allowed form targets
    // (browsers check form-action on the redirect too). Referrer same-origin, so the POST carries
    // this page's Origin rather than "null".
    const signIn = link ? new URL(link.authorizationUrl).origin : undefined;
    sendPage(res, startPage(link, state), {
      formAction: signIn,
      referrerPolicy: 'same-origin',
    });
  });
}

/** How the agent's per-person servers authenticate: each requester's own connection. */
export function personalAuthOf(connections: PersonalConnections, pool: Pool): PersonalAuth {
  return {
    authProvider: (person, server) => connections.authProvider(person, server),
    readOnlyProvider: (person, server) => connections.readOnlyProvider(person, server),
    isConnected: (person, server) => connections.isConnected(person, server),
    anyoneConnected: (server) => anyConnectionTo(pool, server),
    used: async (person, server, tool, outcome) => {
      if (outcome === 'used') await touchConnection(pool, person, server);
      await audit(pool, {
        event: outcome === 'used' ? 'connection_used' : 'connection_refused',
        actor: {
          platform: person.platform,
          userId: person.userId,
          ...(person.workspace ? { workspace: person.workspace } : {}),
        },
        detail: { server, tool },
      });
    },
  };
}

/** `GET /oauth/callback`: the person's browser back from the authorization server. */
function routeCallback(
  http: HttpServer,
  connections: PersonalConnections,
  approvals: ApprovalService,
  platforms: PlatformDirectory,
  log: Logger,
): void {
  const chatName = (platform: string) =>
    platforms.has(platform) ? platforms.rulesOf(platform).displayName : 'the chat';
  http.route(CALLBACK_PATH, async (req, res) => {
    const query = new URL(req.url ?? '/', 'http://localhost').searchParams;
    const state = query.get('state') ?? '';
    const code = query.get('code') ?? '';
    const denied = query.get('error');
    const secure = connections.secureCookies;
    const cookie = state ? connectCookieName(state, secure) : undefined;
    let result;
    if (denied)
      result = { ok: false as const, message: 'The sign-in was cancelled or refused. Nothing was connected.' };
    else if (!state || !code) result = { ok: false as const, message: 'This is not a Connect link I made.' };
    else result = await connections.complete(state, code, cookieValues(req.headers.cookie, cookie!));
    if (!result.ok) log.info({ reason: result.message }, 'a connection callback was refused');
    // The person's requests that waited only for this connection go on now (once each).
    else
      await approvals.continueAfterConnect(result.person, result.server).catch((error: unknown) => {
        log.warn({ err: error }, 'could not continue the requests waiting for a connection');
      });
    // The cookie has done its one job, whatever the outcome.
    sendPage(res, callbackPage(result, chatName), cookie ? { setCookie: clearConnectCookie(cookie, secure) } : {});
  });
}

/**
 * The system prompt's line on per-person servers, for this turn's requester: which of their own
 * accounts are connected. Lists the servers' tools first if someone has connected since.
 */
export function connectionsNoteOf(
  connections: PersonalConnections,
  catalog: { discoverPersonalTools(): Promise<void> },
): (item: WorkItem) => Promise<string | undefined> {
  return async (item) => {
    await catalog.discoverPersonalTools();
    const states = await Promise.all(
      connections.servers.map(async (server) => {
        const connected = await connections.isConnected(item.requester, server);
        const connect = namespacedName(server, CONNECT_TOOL);
        return `${server} (${connected ? 'connected' : `not connected: call ${connect} to ask them privately, or they can connect with \`/countersign connect ${server}\``})`;
      }),
    );
    return `Tools of these MCP servers run as the person who asked, with their own account: ${states.join('; ')}.`;
  };
}

/**
 * Per-person servers as the approval service sees them: which server a call still needs the
 * requester to connect, and the private Connect link (a DM; the operator's own terminal), never in
 * the channel.
 */
export function connectionGateOf(
  connections: PersonalConnections,
  tools: ToolRegistry,
  outbounds: OutboundRegistry,
  platforms: PlatformDirectory,
): ConnectionGate {
  return {
    async missing(requester, call) {
      const server = tools.get(call.name)?.mcp?.server;
      if (!server || !connections.isPersonal(server)) return undefined;
      return (await connections.isConnected(requester, server)) ? undefined : server;
    },
    async sendLink(requester, reply, server, card) {
      const outbound = outbounds.for(reply);
      const terminal = platforms.has(reply.platform) && platforms.rulesOf(reply.platform).operatorTerminal;
      if (!outbound.directChannel && !terminal) return false;
      const started = await connections.start(requester, server, card.workItemId);
      if (!started.ok) return false;
      const target = outbound.directChannel
        ? await outbound.directChannel(requester.userId, requester.workspace)
        : { ...reply, messageId: undefined };
      await outbound.post(
        target,
        `To run ${server} as you, connect your own ${server} account — this link is for you alone and works once: ${started.url}\nThe waiting request goes on by itself once you are connected; or continue without it.`,
        {
          buttons: [
            { label: `Connect ${server}`, value: '', url: started.url, style: 'primary' },
            { label: 'Continue without it', value: continueWithoutValue(card.nonce), style: 'secondary' },
          ],
        },
      );
      return true;
    },
  };
}

/** The Connect page and the sign-in's callback, on the HTTP server people's browsers reach. */
export function routeConnectPages(
  http: HttpServer,
  connections: PersonalConnections,
  approvals: ApprovalService,
  platforms: PlatformDirectory,
  log: Logger,
): void {
  routeStartPage(http, connections);
  routeCallback(http, connections, approvals, platforms, log);
}

/**
 * A connection page: never cached, framed, or leaking its URL (which holds a state) to another site
 * as a referrer.
 */
function sendPage(
  res: ServerResponse,
  page: { status: number; html: string },
  extra: { formAction?: string | undefined; referrerPolicy?: 'same-origin'; setCookie?: string } = {},
): void {
  const formAction = ["'self'", ...(extra.formAction ? [extra.formAction] : [])].join(' ');
  res.writeHead(page.status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'referrer-policy': extra.referrerPolicy ?? 'no-referrer',
    'x-frame-options': 'DENY',
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action ${formAction}; frame-ancestors 'none'`,
    ...(extra.setCookie ? { 'set-cookie': extra.setCookie } : {}),
  });
  res.end(page.html);
}
