import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Queryable } from '../db/pool.ts';
import {
  clientOf,
  connectionOf,
  createState,
  deleteClient,
  deleteConnection,
  deleteConnectionIfRefresh,
  refreshConnection,
  saveClient,
  saveConnection,
  saveStateVerifier,
  type ConnectionPerson,
  type ConsumedState,
} from './store.ts';
import type { TokenSealer } from './token-crypto.ts';

/** A client registered with the authorization server by hand (the server entry's clientId/clientSecret). */
interface PreregisteredClient {
  clientId: string;
  clientSecret?: string;
  /** The authorization server it was registered with; the SDK then never presents it to another. */
  issuer?: string;
}

export interface ConnectionAuthOptions {
  db: Queryable;
  sealer: TokenSealer;
  /** Whose connection: the requester of the turn, never an approver. */
  person: ConnectionPerson;
  /** The MCP server's name in the configuration. */
  server: string;
  /** `${PUBLIC_URL}/oauth/callback`. */
  redirectUrl: string;
  /** CONNECT_TTL_SECONDS: how long a Connect link works. */
  connectTtlSeconds: number;
  /** The parked turn the callback continues. */
  workItemId?: string;
  /** Wins over dynamic registration; nothing about it is stored. */
  preregistered?: PreregisteredClient;
  /** A client ID metadata document (HTTPS), used where the authorization server supports them. */
  clientMetadataUrl?: string;
  clientName?: string;
  scope?: string;
  /** At the callback: the state it brought, consumed; its verifier finishes the authorization. */
  consumed?: ConsumedState;
}

export type CredentialScope = 'all' | 'client' | 'tokens' | 'verifier' | 'discovery';

/** Two people connected to a server for the first time at once and the other registration was kept. */
export class ClientRegistrationRaceError extends Error {
  override name = 'ClientRegistrationRaceError';
  constructor(server: string) {
    super(`Another registration with ${server} was stored at the same moment: connect again to use it`);
  }
}

const samePerson = (a: ConnectionPerson, b: ConnectionPerson) =>
  a.platform === b.platform && a.userId === b.userId && (a.workspace ?? '') === (b.workspace ?? '');

/**
 * The MCP SDK's OAuthClientProvider for ONE person's connection to ONE server: `auth()` and the
 * Streamable HTTP transport read and write that person's tokens through it, sealed in the database.
 * It never opens a browser: `redirectToAuthorization` keeps the URL for the caller to show the
 * person as a Connect link, and `state()` makes the single-use state the callback must bring.
 *
 * At the callback, build it with `consumed` (from `consumeState`): the verifier comes from there,
 * and the person and server must be the ones the state was made for.
 */
export class ConnectionAuthProvider implements OAuthClientProvider {
  /** The URL the person must open to authorize, once `auth()` answered 'REDIRECT'. */
  authorizationUrl: URL | undefined;
  /** What `invalidateCredentials` was asked to drop, in order: the caller audits a removed connection. */
  readonly invalidated: CredentialScope[] = [];
  /** Unset for a pre-registered client, so the SDK neither registers nor rebinds it. */
  readonly saveClientInformation?: (info: OAuthClientInformationMixed) => Promise<void>;
  readonly clientMetadataUrl?: string;

  readonly #options: ConnectionAuthOptions;
  /** The refresh token `tokens()` last handed the SDK: the one a refusal refers to. */
  #refreshTokenRead: string | undefined;
  #rawState: string | undefined;
  #codeVerifier: string | undefined;
  /** The stored registration's client id as last read (null: none), for the compare-and-set. */
  #storedClientId: string | null = null;

  constructor(options: ConnectionAuthOptions) {
    const { consumed } = options;
    if (consumed && (!samePerson(consumed.person, options.person) || consumed.server !== options.server)) {
      throw new Error('This authorization was started by another person or for another server');
    }
    this.#options = options;
    if (options.clientMetadataUrl) this.clientMetadataUrl = options.clientMetadataUrl;
    if (!options.preregistered) this.saveClientInformation = (info) => this.#saveRegistration(info);
  }

  get redirectUrl(): string {
    return this.#options.redirectUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    const { redirectUrl, clientName, scope } = this.#options;
    return {
      client_name: clientName ?? 'Countersign',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...(scope ? { scope } : {}),
    };
  }

  /** The state of a new authorization: single use, bound to the person, server and parked turn. */
  async state(): Promise<string> {
    const { db, person, server, workItemId, connectTtlSeconds } = this.#options;
    this.#rawState = await createState(db, {
      person,
      server,
      ttlSeconds: connectTtlSeconds,
      ...(workItemId ? { workItemId } : {}),
    });
    return this.#rawState;
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    const { preregistered, db, sealer, server, redirectUrl } = this.#options;
    if (preregistered) {
      return {
        client_id: preregistered.clientId,
        ...(preregistered.clientSecret ? { client_secret: preregistered.clientSecret } : {}),
        ...(preregistered.issuer ? { issuer: preregistered.issuer } : {}),
      };
    }
    const stored = await clientOf(db, sealer, server);
    this.#storedClientId = stored?.client_id ?? null;
    // Registered for another callback URL (PUBLIC_URL changed): the server would refuse the
    // redirect, so register again, replacing it.
    if (stored && 'redirect_uris' in stored && !stored.redirect_uris.includes(redirectUrl)) return undefined;
    return stored;
  }

  async #saveRegistration(info: OAuthClientInformationMixed): Promise<void> {
    const { db, sealer, server } = this.#options;
    if (!(await saveClient(db, sealer, server, info, this.#storedClientId))) {
      throw new ClientRegistrationRaceError(server);
    }
    this.#storedClientId = info.client_id;
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    const { db, sealer, person, server } = this.#options;
    const tokens = (await connectionOf(db, sealer, person, server))?.tokens;
    this.#refreshTokenRead = tokens?.refresh_token;
    return tokens;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    const { db, sealer, person, server, consumed } = this.#options;
    // A sign-in (the callback) makes the connection; a refresh only renews one that still exists,
    // so a refresh in flight while the person disconnects never brings it back.
    if (consumed) await saveConnection(db, sealer, person, server, { tokens, reconnected: true });
    else await refreshConnection(db, sealer, person, server, tokens);
    this.#refreshTokenRead = tokens.refresh_token;
  }

  redirectToAuthorization(authorizationUrl: URL): void {
    this.authorizationUrl = authorizationUrl;
  }

  async saveCodeVerifier(codeVerifier: string): Promise<void> {
    const { db, sealer } = this.#options;
    if (this.#rawState === undefined) throw new Error('A PKCE verifier was given before the state was made');
    if (!(await saveStateVerifier(db, sealer, this.#rawState, codeVerifier))) {
      throw new Error('The authorization state was used or swept before its verifier was saved');
    }
    this.#codeVerifier = codeVerifier;
  }

  codeVerifier(): string {
    const verifier = this.#options.consumed?.codeVerifier ?? this.#codeVerifier;
    if (verifier === undefined) throw new Error('No authorization is in progress for this connection');
    return verifier;
  }

  /**
   * The SDK's answer to a refused credential: `tokens` on invalid_grant (the refresh token is dead:
   * the connection goes, and the person is asked again), `all` on invalid_client (the registration
   * too). At a callback, invalid_grant refuses the code, not the stored connection, which stays.
   */
  async invalidateCredentials(scope: CredentialScope): Promise<void> {
    const { db, person, server, consumed, preregistered } = this.#options;
    this.invalidated.push(scope);
    // invalid_grant on a refresh: the refresh token this provider read is dead. Removed only while the
    // connection still holds it; one renewed meanwhile (a concurrent refresh) keeps its new tokens.
    if (scope === 'tokens' && !consumed)
      await deleteConnectionIfRefresh(db, this.#options.sealer, person, server, this.#refreshTokenRead);
    if (scope === 'all') await deleteConnection(db, person, server);
    if ((scope === 'all' || scope === 'client') && !preregistered) {
      await deleteClient(db, server);
      this.#storedClientId = null;
    }
    if (scope === 'all' || scope === 'verifier') this.#codeVerifier = undefined;
  }
}
