import { createHash, randomBytes } from 'node:crypto';
import {
  OAuthClientInformationFullSchema,
  OAuthClientInformationSchema,
  OAuthTokensSchema,
  type OAuthClientInformationMixed,
  type OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Requester } from '../core/person.ts';
import type { Queryable } from '../db/pool.ts';
import type { TokenSealer } from './token-crypto.ts';

/**
 * SQL of per-person connections (countersign.connections, oauth_clients, oauth_states; migration
 * 020). One statement per function. Secrets go in and come out in the clear here and are sealed
 * in between, so no caller can store a token unsealed; each is sealed for its own row, so a sealed
 * value copied to another row does not open there.
 */

/** Whose connection: a user id means a person only within the workspace that vouches for it. */
export type ConnectionPerson = Pick<Requester, 'platform' | 'userId' | 'workspace'>;

/** A connection as listed to people and operators: never a token. */
export interface ConnectionListing {
  platform: string;
  userId: string;
  /** '' where the platform has no workspace. */
  workspace: string;
  server: string;
  accountName?: string;
  connectedAt: Date;
  lastUsedAt?: Date;
  /** When the access token expires, when the server said. */
  expiresAt?: Date;
}

export interface Connection extends ConnectionListing {
  tokens: OAuthTokens;
}

const personKey = (person: ConnectionPerson) => [person.platform, person.userId, person.workspace ?? ''] as const;

const tokensContext = (person: ConnectionPerson, server: string) =>
  JSON.stringify(['connection', ...personKey(person), server]);
const clientContext = (server: string) => JSON.stringify(['oauth_client', server]);
const verifierContext = (stateHash: string) => JSON.stringify(['oauth_state', stateHash]);

interface ListingRow {
  platform: string;
  user_id: string;
  workspace: string;
  server: string;
  account_name: string | null;
  connected_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
}

const LISTING_COLUMNS = 'platform, user_id, workspace, server, account_name, connected_at, last_used_at, expires_at';

function toListing(row: ListingRow): ConnectionListing {
  return {
    platform: row.platform,
    userId: row.user_id,
    workspace: row.workspace,
    server: row.server,
    ...(row.account_name !== null ? { accountName: row.account_name } : {}),
    connectedAt: row.connected_at,
    ...(row.last_used_at ? { lastUsedAt: row.last_used_at } : {}),
    ...(row.expires_at ? { expiresAt: row.expires_at } : {}),
  };
}

export interface SaveConnection {
  tokens: OAuthTokens;
  /** The account at the server; when absent, the one already stored stays. */
  accountName?: string;
  /** A new authorization (not a refresh): the connection counts as made now. */
  reconnected?: boolean;
}

/** Stores the person's tokens for the server: a new connection, a reconnection or a refresh. */
export async function saveConnection(
  db: Queryable,
  sealer: TokenSealer,
  person: ConnectionPerson,
  server: string,
  { tokens, accountName, reconnected = false }: SaveConnection,
): Promise<void> {
  await db.query(
    `INSERT INTO countersign.connections (platform, user_id, workspace, server, sealed_tokens, account_name, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, now() + $7::double precision * interval '1 second')
     ON CONFLICT (platform, user_id, workspace, server) DO UPDATE SET
       sealed_tokens = EXCLUDED.sealed_tokens,
       account_name = COALESCE(EXCLUDED.account_name, connections.account_name),
       expires_at = EXCLUDED.expires_at,
       connected_at = CASE WHEN $8::boolean THEN now() ELSE connections.connected_at END`,
    [
      ...personKey(person),
      server,
      sealer.seal(tokens, tokensContext(person, server)),
      accountName ?? null,
      tokens.expires_in ?? null,
      reconnected,
    ],
  );
}

/** The person's connection to the server with its tokens, or undefined when they have none. */
export async function connectionOf(
  db: Queryable,
  sealer: TokenSealer,
  person: ConnectionPerson,
  server: string,
): Promise<Connection | undefined> {
  const { rows } = await db.query<ListingRow & { sealed_tokens: string }>(
    `SELECT ${LISTING_COLUMNS}, sealed_tokens FROM countersign.connections
     WHERE platform = $1 AND user_id = $2 AND workspace = $3 AND server = $4`,
    [...personKey(person), server],
  );
  const row = rows[0];
  if (!row) return undefined;
  const tokens = OAuthTokensSchema.parse(sealer.open(row.sealed_tokens, tokensContext(person, server)));
  return { ...toListing(row), tokens };
}

/** Records a use of the connection (a tool call that ran with it). False when there is none. */
export async function touchConnection(db: Queryable, person: ConnectionPerson, server: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE countersign.connections SET last_used_at = now()
     WHERE platform = $1 AND user_id = $2 AND workspace = $3 AND server = $4`,
    [...personKey(person), server],
  );
  return (rowCount ?? 0) > 0;
}

/** Removes the person's connection to the server. False when there was none. */
export async function deleteConnection(db: Queryable, person: ConnectionPerson, server: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `DELETE FROM countersign.connections
     WHERE platform = $1 AND user_id = $2 AND workspace = $3 AND server = $4`,
    [...personKey(person), server],
  );
  return (rowCount ?? 0) > 0;
}

/** The person's sealed tokens as stored now (for a compare-and-delete), without opening them. */
async function sealedTokensOf(db: Queryable, person: ConnectionPerson, server: string): Promise<string | undefined> {
  const { rows } = await db.query<{ sealed_tokens: string }>(
    `SELECT sealed_tokens FROM countersign.connections
      WHERE platform = $1 AND user_id = $2 AND workspace = $3 AND server = $4`,
    [...personKey(person), server],
  );
  return rows[0]?.sealed_tokens;
}

async function deleteSealed(db: Queryable, person: ConnectionPerson, server: string, sealed: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `DELETE FROM countersign.connections
      WHERE platform = $1 AND user_id = $2 AND workspace = $3 AND server = $4 AND sealed_tokens = $5`,
    [...personKey(person), server, sealed],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Removes the connection only while it still holds `refreshToken` (the one the server refused): a
 * refresh that renewed it meanwhile (another worker, another request) keeps its new tokens. The
 * delete compares the stored ciphertext, so a renewal between the read and the delete wins too.
 */
export async function deleteConnectionIfRefresh(
  db: Queryable,
  sealer: TokenSealer,
  person: ConnectionPerson,
  server: string,
  refreshToken: string | undefined,
): Promise<boolean> {
  const sealed = await sealedTokensOf(db, person, server);
  if (!sealed) return false;
  const tokens = OAuthTokensSchema.parse(sealer.open(sealed, tokensContext(person, server)));
  if (tokens.refresh_token !== refreshToken) return false;
  return deleteSealed(db, person, server, sealed);
}

/** Renewed tokens of a connection that still exists: a refresh never brings back a removed one. */
export async function refreshConnection(
  db: Queryable,
  sealer: TokenSealer,
  person: ConnectionPerson,
  server: string,
  tokens: OAuthTokens,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE countersign.connections
        SET sealed_tokens = $5, expires_at = now() + $6::double precision * interval '1 second'
      WHERE platform = $1 AND user_id = $2 AND workspace = $3 AND server = $4`,
    [...personKey(person), server, sealer.seal(tokens, tokensContext(person, server)), tokens.expires_in ?? null],
  );
  return (rowCount ?? 0) > 0;
}

/** One person's connections, or everyone's (for operators); no tokens either way. */
export async function listConnections(db: Queryable, person?: ConnectionPerson): Promise<ConnectionListing[]> {
  const { rows } = await db.query<ListingRow>(
    `SELECT ${LISTING_COLUMNS} FROM countersign.connections
     WHERE $1::text IS NULL OR (platform = $1 AND user_id = $2 AND workspace = $3)
     ORDER BY platform, workspace, user_id, server`,
    person ? [...personKey(person)] : [null, null, null],
  );
  return rows.map(toListing);
}

/** Someone connected to `server` (the most recently used), whose connection may list its tools. */
export async function anyConnectionTo(db: Queryable, server: string): Promise<ConnectionListing | undefined> {
  const { rows } = await db.query<ListingRow>(
    `SELECT ${LISTING_COLUMNS} FROM countersign.connections WHERE server = $1
     ORDER BY last_used_at DESC NULLS LAST, connected_at DESC LIMIT 1`,
    [server],
  );
  return rows[0] && toListing(rows[0]);
}

/**
 * Keeps the client registration at the server's authorization server. Compare-and-set: it replaces
 * the stored one only if that is still `replacing` (the client id its writer read; null: none was
 * stored), so of two first registrations at once only one is kept. False when another won.
 */
export async function saveClient(
  db: Queryable,
  sealer: TokenSealer,
  server: string,
  client: OAuthClientInformationMixed,
  replacing: string | null = null,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO countersign.oauth_clients (server, client_id, sealed_client) VALUES ($1, $2, $3)
     ON CONFLICT (server) DO UPDATE SET
       client_id = EXCLUDED.client_id, sealed_client = EXCLUDED.sealed_client, created_at = now()
     WHERE oauth_clients.client_id IS NOT DISTINCT FROM $4::text`,
    [server, client.client_id, sealer.seal(client, clientContext(server)), replacing],
  );
  return (rowCount ?? 0) > 0;
}

/** The stored client registration for the server, or undefined when it has none. */
export async function clientOf(
  db: Queryable,
  sealer: TokenSealer,
  server: string,
): Promise<OAuthClientInformationMixed | undefined> {
  const { rows } = await db.query<{ sealed_client: string }>(
    `SELECT sealed_client FROM countersign.oauth_clients WHERE server = $1`,
    [server],
  );
  const row = rows[0];
  if (!row) return undefined;
  const value = sealer.open(row.sealed_client, clientContext(server));
  const full = OAuthClientInformationFullSchema.safeParse(value);
  return full.success ? full.data : OAuthClientInformationSchema.parse(value);
}

/** Forgets the server's client registration (the authorization server no longer knows it). */
export async function deleteClient(db: Queryable, server: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM countersign.oauth_clients WHERE server = $1`, [server]);
  return (rowCount ?? 0) > 0;
}

/** What is stored of a state: its SHA-256, so a leaked table cannot answer a callback. */
export function stateHash(rawState: string): string {
  return createHash('sha256').update(rawState, 'utf8').digest('hex');
}

export interface NewState {
  person: ConnectionPerson;
  server: string;
  /** The parked turn the callback continues, if any. */
  workItemId?: string;
  /** CONNECT_TTL_SECONDS: how long the Connect link works. */
  ttlSeconds: number;
}

/** Starts an authorization: a fresh single-use state bound to the person, server and turn. Returns it raw. */
export async function createState(
  db: Queryable,
  { person, server, workItemId, ttlSeconds }: NewState,
): Promise<string> {
  const raw = randomBytes(32).toString('base64url');
  await db.query(
    `INSERT INTO countersign.oauth_states (state_hash, platform, user_id, workspace, server, work_item_id, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6::uuid, now() + $7::double precision * interval '1 second')`,
    [stateHash(raw), ...personKey(person), server, workItemId ?? null, ttlSeconds],
  );
  return raw;
}

/** Keeps the PKCE verifier of the authorization the state started. False when the state is unknown or used. */
export async function saveStateVerifier(
  db: Queryable,
  sealer: TokenSealer,
  rawState: string,
  codeVerifier: string,
): Promise<boolean> {
  const hash = stateHash(rawState);
  const { rowCount } = await db.query(
    `UPDATE countersign.oauth_states SET sealed_code_verifier = $2 WHERE state_hash = $1 AND used_at IS NULL`,
    [hash, sealer.seal(codeVerifier, verifierContext(hash))],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Keeps where a Connect link's sign-in goes and whose chat account it is for, for the bot's own
 * Connect page (`/oauth/start`). The authorization URL carries no secret (PKCE sends only the
 * challenge); it is stored in the clear.
 */
export async function saveStateLink(
  db: Queryable,
  rawState: string,
  authorizationUrl: string,
  personLabel: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE countersign.oauth_states SET authorization_url = $2, person_label = $3
      WHERE state_hash = $1 AND used_at IS NULL`,
    [stateHash(rawState), authorizationUrl, personLabel],
  );
  return (rowCount ?? 0) > 0;
}

/** A Connect link still usable (unused, unexpired by the database clock), read without using it. */
export async function stateLink(
  db: Queryable,
  rawState: string,
): Promise<{ server: string; personLabel: string; authorizationUrl: string } | undefined> {
  const { rows } = await db.query<{ server: string; person_label: string | null; authorization_url: string | null }>(
    `SELECT server, person_label, authorization_url FROM countersign.oauth_states
      WHERE state_hash = $1 AND used_at IS NULL AND expires_at > now()`,
    [stateHash(rawState)],
  );
  const row = rows[0];
  return row?.authorization_url
    ? { server: row.server, personLabel: row.person_label ?? 'someone', authorizationUrl: row.authorization_url }
    : undefined;
}

/**
 * The Connect page's button was pressed: the state is bound to that browser (the hash of its new
 * cookie; a later press replaces it, so only the last browser to confirm can complete) and its
 * sign-in URL returned, with how long the link has left. Undefined when the link is not usable.
 */
export async function confirmStateInBrowser(
  db: Queryable,
  rawState: string,
  browserHash: string,
): Promise<{ authorizationUrl: string; secondsLeft: number } | undefined> {
  const { rows } = await db.query<{ authorization_url: string; seconds_left: number }>(
    `UPDATE countersign.oauth_states SET browser_hash = $2
      WHERE state_hash = $1 AND used_at IS NULL AND expires_at > now() AND authorization_url IS NOT NULL
      RETURNING authorization_url, extract(epoch FROM expires_at - now())::float8 AS seconds_left`,
    [stateHash(rawState), browserHash],
  );
  const row = rows[0];
  return row ? { authorizationUrl: row.authorization_url, secondsLeft: row.seconds_left } : undefined;
}

/** Why a callback's state was refused. */
type StateRefusal = 'forged' | 'replayed' | 'expired';

export interface ConsumedState {
  person: { platform: string; userId: string; workspace: string };
  server: string;
  workItemId?: string;
  codeVerifier: string;
  /** The hash of the cookie of the browser that confirmed the link; null when none did. */
  browserHash: string | null;
}

export type ConsumeStateResult = { ok: true; state: ConsumedState } | { ok: false; reason: StateRefusal };

interface ConsumeRow {
  replayed: boolean;
  expired: boolean;
  unfinished: boolean;
  platform: string | null;
  user_id: string | null;
  workspace: string | null;
  server: string | null;
  work_item_id: string | null;
  sealed_code_verifier: string | null;
  browser_hash: string | null;
}

/**
 * Uses a callback's state, once: compare-and-set on used_at, so of two callbacks with one state
 * exactly one gets it. An unknown state is forged — as is one whose authorization never got its
 * verifier, which no person was sent out with. Expiry is judged by the database's clock.
 */
export async function consumeState(db: Queryable, sealer: TokenSealer, rawState: string): Promise<ConsumeStateResult> {
  const hash = stateHash(rawState);
  // Both CTEs see the rows as they were before the UPDATE, so `found` tells why `taken` is empty.
  const { rows } = await db.query<ConsumeRow>(
    `WITH found AS (
       SELECT used_at IS NOT NULL AS replayed, expires_at <= now() AS expired, sealed_code_verifier IS NULL AS unfinished
       FROM countersign.oauth_states WHERE state_hash = $1
     ), taken AS (
       UPDATE countersign.oauth_states SET used_at = now()
       WHERE state_hash = $1 AND used_at IS NULL AND expires_at > now() AND sealed_code_verifier IS NOT NULL
       RETURNING platform, user_id, workspace, server, work_item_id, sealed_code_verifier, browser_hash
     )
     SELECT found.replayed, found.expired, found.unfinished, taken.*
     FROM found LEFT JOIN taken ON true`,
    [hash],
  );
  return stateOutcome(rows[0], sealer, hash);
}

function stateOutcome(row: ConsumeRow | undefined, sealer: TokenSealer, hash: string): ConsumeStateResult {
  if (!row) return { ok: false, reason: 'forged' };
  if (row.sealed_code_verifier === null || row.platform === null || row.user_id === null || row.server === null) {
    if (row.replayed) return { ok: false, reason: 'replayed' };
    if (row.expired) return { ok: false, reason: 'expired' };
    if (row.unfinished) return { ok: false, reason: 'forged' };
    // Neither used nor expired as this statement began, yet not taken: a concurrent callback took it.
    return { ok: false, reason: 'replayed' };
  }
  const codeVerifier = sealer.open(row.sealed_code_verifier, verifierContext(hash));
  if (typeof codeVerifier !== 'string') throw new Error('Stored PKCE verifier is not a string');
  return {
    ok: true,
    state: {
      person: { platform: row.platform, userId: row.user_id, workspace: row.workspace ?? '' },
      server: row.server,
      ...(row.work_item_id ? { workItemId: row.work_item_id } : {}),
      codeVerifier,
      browserHash: row.browser_hash,
    },
  };
}

/**
 * Deletes states that expired more than `graceSeconds` ago. The grace keeps a used or expired state
 * long enough for a late callback to be told "expired" or "already used" rather than "forged".
 */
export async function sweepExpiredStates(db: Queryable, graceSeconds = 86_400): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM countersign.oauth_states WHERE expires_at < now() - $1::double precision * interval '1 second'`,
    [graceSeconds],
  );
  return rowCount ?? 0;
}
