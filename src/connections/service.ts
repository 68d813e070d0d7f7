import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import type { Logger } from 'pino';
import type { Requester } from '../core/person.ts';
import type { Queryable } from '../db/pool.ts';
import { ConnectionAuthProvider } from './oauth-provider.ts';
import { newBrowserSecret, sameBrowser } from './browser-binding.ts';
import {
  confirmStateInBrowser,
  connectionOf,
  consumeState,
  deleteConnection,
  listConnections,
  saveStateLink,
  stateLink,
  type ConnectionPerson,
} from './store.ts';
import type { TokenSealer } from './token-crypto.ts';
import { revokeAtServer, type RevocationOutcome } from './revoke.ts';

/** A per-person MCP server (an MCP config entry with `"auth": "oauth"`). */
export interface PersonalServer {
  name: string;
  url: string;
  /** A client registered with the server ahead of time (GitHub style); else dynamic registration. */
  clientId?: string;
  clientSecret?: string;
  scope?: string;
}

/** What happened to a connection, for the audit log. */
type ConnectionEvent = 'connected' | 'connection_used' | 'disconnected' | 'connection_refused';

export interface PersonalConnectionsOptions {
  db: Queryable;
  sealer: TokenSealer;
  /** Where the bot's HTTP server is reachable: the callback is `${publicUrl}/oauth/callback`. */
  publicUrl: string;
  /** CONNECT_TTL_SECONDS: how long a Connect link works. */
  ttlSeconds: number;
  servers: readonly PersonalServer[];
  log: Logger;
  record(event: ConnectionEvent, person: Requester, detail: Record<string, unknown>): Promise<void>;
  /** A person as their Connect page names them: their chat's name, their name there, their account. */
  labelOf(person: Requester): string;
  /** How long the token endpoint may take at the callback before the person is told it failed. */
  exchangeTimeoutMs?: number;
}

/** The path the authorization server sends the person's browser back to. */
export const CALLBACK_PATH = '/oauth/callback';

/** The bot's own Connect page, where a Connect link leads first. */
export const START_PATH = '/oauth/start';

/** What the callback page says. */
export type CallbackResult = { ok: true; server: string; person: ConnectionPerson } | { ok: false; message: string };

const EXCHANGE_TIMEOUT_MS = 15_000;

/** The callback page when the browser is not the one that confirmed the link on the Connect page. */
const OTHER_BROWSER =
  'Nothing was connected: this sign-in was not confirmed in this browser. If someone sent you a sign-in link, do not use it. ' +
  'If you asked for the link yourself, ask for a new Connect link in the chat, open the Connect link in this browser and confirm there.';

/**
 * Per-person connections to MCP servers (docs/connections.md): the Connect link for a person, the
 * callback that stores their tokens, the provider their calls authenticate with, their list.
 * Each person's tokens are their own: whoever approves a call never changes whose account runs it.
 */
export class PersonalConnections {
  readonly servers: readonly string[];
  readonly #options: PersonalConnectionsOptions;
  readonly #byName: Map<string, PersonalServer>;

  constructor(options: PersonalConnectionsOptions) {
    this.#options = options;
    this.#byName = new Map(options.servers.map((s) => [s.name, s]));
    this.servers = [...this.#byName.keys()].sort();
  }

  get callbackUrl(): string {
    return new URL(CALLBACK_PATH, this.#options.publicUrl).toString();
  }

  /** Whether `server` is a per-person one. */
  isPersonal(server: string): boolean {
    return this.#byName.has(server);
  }

  /** The provider a person's calls to `server` authenticate with (tokens refreshed as the SDK needs). */
  authProvider(person: ConnectionPerson, server: string, workItemId?: string): ConnectionAuthProvider {
    return new ConnectionAuthProvider({
      ...this.#providerOptions(personOf(person), server),
      ...(workItemId ? { workItemId } : {}),
    });
  }

  /**
   * A provider that only reads the person's tokens: for listing a server's tools through someone's
   * connection, it never starts a sign-in, never registers, and never deletes their connection.
   */
  readOnlyProvider(person: ConnectionPerson, server: string): ConnectionAuthProvider {
    const provider = this.authProvider(person, server);
    provider.invalidateCredentials = async () => undefined;
    provider.state = async () => {
      throw new Error('listing tools never starts a sign-in');
    };
    provider.redirectToAuthorization = async () => {
      throw new Error('listing tools never starts a sign-in');
    };
    return provider;
  }

  /** Whether the person has a stored connection to `server`. */
  async isConnected(person: ConnectionPerson, server: string): Promise<boolean> {
    return (await connectionOf(this.#options.db, this.#options.sealer, personOf(person), server)) !== undefined;
  }

  /**
   * The Connect link for this person and server, for them alone: a single-use state bound to both,
   * expiring after CONNECT_TTL_SECONDS. Already connected: says so (Disconnect first to switch accounts).
   */
  async start(
    person: Requester,
    server: string,
    workItemId?: string,
  ): Promise<{ ok: true; server: string; url: string } | { ok: false; message: string }> {
    if (!this.#byName.has(server)) return { ok: false, message: this.#unknown(server) };
    if (await this.isConnected(person, server))
      return { ok: false, message: `You are already connected to ${server}. Disconnect first to use another account.` };
    const provider = this.authProvider(person, server, workItemId);
    try {
      const result = await withTimeout(
        auth(provider, { serverUrl: this.#server(server).url, fetchFn: this.#boundedFetch }),
        this.#exchangeTimeoutMs,
        `${server} did not answer`,
      );
      const authorizationUrl = provider.authorizationUrl;
      const state = authorizationUrl?.searchParams.get('state');
      if (result !== 'REDIRECT' || !authorizationUrl || !state)
        return { ok: false, message: `You are already connected to ${server}.` };
      // The link leads to our own page first, which names whose chat account the sign-in is for.
      await saveStateLink(this.#options.db, state, authorizationUrl.toString(), this.#options.labelOf(person));
      const link = new URL(START_PATH, this.#options.publicUrl);
      link.searchParams.set('s', state);
      return { ok: true, server, url: link.toString() };
    } catch (error) {
      this.#options.log.warn({ err: error, server }, 'could not start a connection');
      return { ok: false, message: `I could not reach ${server}'s sign-in: ${reasonOf(error)}. Try again later.` };
    }
  }

  /** Whether the bot is served over https (its cookies are then Secure and `__Host-`). */
  get secureCookies(): boolean {
    return new URL(this.#options.publicUrl).protocol === 'https:';
  }

  /** The origin people's browsers see the bot at: the Connect page's POST must come from it. */
  get publicOrigin(): string {
    return new URL(this.#options.publicUrl).origin;
  }

  /**
   * The Connect page's button: binds the link to this browser with a fresh secret (its cookie) and
   * gives the sign-in URL to send it on to. Undefined when the link is used, expired or not ours.
   */
  async confirm(
    rawState: string,
  ): Promise<{ authorizationUrl: string; browserSecret: string; secondsLeft: number } | undefined> {
    const { secret, hash } = newBrowserSecret();
    const confirmed = await confirmStateInBrowser(this.#options.db, rawState, hash);
    return confirmed && { ...confirmed, browserSecret: secret };
  }

  /**
   * The authorization server sent the person's browser back: the state is consumed (forged, replayed
   * or expired ones are refused), the browser must be the one that confirmed the link on the Connect
   * page (its cookie, `browserSecrets`), the code exchanged within a time limit, and the tokens stored
   * for the person the state was made for — never for whoever holds the link.
   */
  async complete(rawState: string, code: string, browserSecrets: readonly string[]): Promise<CallbackResult> {
    const { db, sealer } = this.#options;
    const consumed = await consumeState(db, sealer, rawState);
    if (!consumed.ok) {
      return {
        ok: false,
        message:
          consumed.reason === 'expired'
            ? 'This Connect link has expired. Ask for a new one in the chat.'
            : consumed.reason === 'replayed'
              ? 'This Connect link was already used. If you are not connected, ask for a new one in the chat.'
              : 'This is not a Connect link I made.',
      };
    }
    const { person, server } = consumed.state;
    // The state is used up either way: a sign-in that reached another browser (someone sent on the
    // sign-in URL of their own link) is never exchanged, so its code can connect no one later.
    if (!sameBrowser(consumed.state.browserHash, browserSecrets)) {
      await this.#options.record('connection_refused', person, { server, reason: 'not the confirming browser' });
      return { ok: false, message: OTHER_BROWSER };
    }
    if (!this.#byName.has(server)) return { ok: false, message: `${server} is no longer configured here.` };
    const provider = new ConnectionAuthProvider({
      ...this.#providerOptions(person, server),
      consumed: consumed.state,
    });
    try {
      const result = await withTimeout(
        auth(provider, { serverUrl: this.#server(server).url, authorizationCode: code, fetchFn: this.#boundedFetch }),
        this.#exchangeTimeoutMs,
        `${server} did not answer in time`,
      );
      if (result !== 'AUTHORIZED') return { ok: false, message: `${server} did not finish the sign-in.` };
    } catch (error) {
      // The overall time limit can fire while the token answer is being saved: the tokens decide.
      if (await this.isConnected(person, server)) {
        await this.#options.record('connected', person, { server });
        return { ok: true, server, person };
      }
      this.#options.log.warn({ err: error, server }, 'a connection could not be completed');
      await this.#options.record('connection_refused', person, { server, reason: reasonOf(error) });
      return {
        ok: false,
        message: `${server} refused the sign-in (${reasonOf(error)}). Ask for a new link in the chat.`,
      };
    }
    await this.#options.record('connected', person, { server });
    return { ok: true, server, person };
  }

  /** A Connect link's page: still usable, for whom, and where its sign-in goes. */
  linkOf(rawState: string): Promise<{ server: string; personLabel: string; authorizationUrl: string } | undefined> {
    return stateLink(this.#options.db, rawState);
  }

  /** The person's connections, for them alone: never a token; `connected` names the servers they may disconnect. */
  async describe(person: Requester): Promise<{ text: string; connected: string[] }> {
    const mine = await listConnections(this.#options.db, personOf(person));
    const lines = this.servers.map((server) => {
      const c = mine.find((m) => m.server === server);
      if (!c) return `• ${server}: not connected`;
      const account = c.accountName ? ` as ${c.accountName}` : '';
      const used = c.lastUsedAt ? `, last used ${c.lastUsedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC` : '';
      return `• ${server}: connected${account} since ${c.connectedAt.toISOString().slice(0, 10)}${used}`;
    });
    return {
      text: [`Your connections (${mine.length} of ${this.servers.length}):`, ...lines].join('\n'),
      connected: this.servers.filter((s) => mine.some((m) => m.server === s)),
    };
  }

  /** A Disconnect click: ends the clicker's own connection and says what became of its tokens. */
  async disconnectAndSay(person: Requester, server: string): Promise<string> {
    if (!this.isPersonal(server)) return this.#unknown(server);
    const done = await this.disconnect(person, server);
    if (!done) return `You are not connected to ${server}.`;
    const settings = `remove this app's access in your ${server} account settings`;
    if (done.revoked === 'revoked')
      return `Disconnected from ${server}: ${server} revoked your tokens, and they are forgotten here.`;
    if (done.revoked === 'not supported')
      return `Disconnected from ${server}: your tokens are forgotten here. ${server} offers no revoking; to end its grant too, ${settings}.`;
    return `Disconnected from ${server}: your tokens are forgotten here, but ${server} did not confirm revoking them; to be sure, ${settings}.`;
  }

  /**
   * Ends the person's connection to `server`: its tokens are revoked at the server where it supports
   * revocation, and forgotten here in any case. Undefined when there was no connection.
   */
  async disconnect(person: Requester, server: string): Promise<{ revoked: RevocationOutcome } | undefined> {
    const who = personOf(person);
    const connection = await connectionOf(this.#options.db, this.#options.sealer, who, server).catch(() => undefined);
    const revoked = connection
      ? await revokeAtServer(
          this.#server(server).url,
          connection.tokens,
          await this.authProvider(who, server).clientInformation(),
          this.#boundedFetch,
        )
      : 'not supported';
    const gone = await deleteConnection(this.#options.db, who, server);
    if (!gone) return undefined;
    await this.#options.record('disconnected', person, { server, revokedAtServer: revoked });
    return { revoked };
  }

  #providerOptions(person: ConnectionPerson, server: string) {
    const config = this.#server(server);
    return {
      db: this.#options.db,
      sealer: this.#options.sealer,
      person,
      server,
      redirectUrl: this.callbackUrl,
      connectTtlSeconds: this.#options.ttlSeconds,
      ...(config.clientId
        ? {
            preregistered: {
              clientId: config.clientId,
              ...(config.clientSecret ? { clientSecret: config.clientSecret } : {}),
            },
          }
        : {}),
      ...(config.scope ? { scope: config.scope } : {}),
    };
  }

  /** Every request of a sign-in ends within the time limit: a hanging server never holds a callback open. */
  readonly #boundedFetch = (url: string | URL, init?: RequestInit) =>
    fetch(url, { ...init, signal: AbortSignal.timeout(this.#exchangeTimeoutMs) });

  get #exchangeTimeoutMs(): number {
    return this.#options.exchangeTimeoutMs ?? EXCHANGE_TIMEOUT_MS;
  }

  #server(name: string): PersonalServer {
    const server = this.#byName.get(name);
    if (!server) throw new Error(this.#unknown(name));
    return server;
  }

  #unknown(name: string): string {
    return this.servers.length
      ? `There is no per-person server "${name.slice(0, 60)}" here. Known: ${this.servers.join(', ')}.`
      : 'No per-person MCP servers are configured here.';
  }
}

/** The part of a person a connection is keyed by. */
function personOf(person: ConnectionPerson): ConnectionPerson {
  return {
    platform: person.platform,
    userId: person.userId,
    ...(person.workspace ? { workspace: person.workspace } : {}),
  };
}

/** A failure as one line a person may read: no tokens, no URLs with secrets. */
function reasonOf(error: unknown): string {
  const message = (error as Error)?.message ?? String(error);
  return message
    .replace(/https?:\/\/\S+/g, '(url)')
    .replace(/\s+/g, ' ')
    .slice(0, 160);
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(what)), ms);
    }),
  ]);
}
