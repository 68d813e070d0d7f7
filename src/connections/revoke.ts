import { discoverOAuthServerInfo } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/** What revoking a person's tokens at the server came to (recorded with `disconnected`). */
export type RevocationOutcome = 'revoked' | 'not supported' | 'failed';

type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * Revokes a person's tokens at the authorization server (RFC 7009) when it names a revocation
 * endpoint in its metadata: the refresh token first — revoking it ends the grant at most servers —
 * then the access token. Never throws: a server that is down or refuses must not keep a person from
 * disconnecting; the caller deletes the connection here either way and records the outcome.
 */
export async function revokeAtServer(
  serverUrl: string,
  tokens: OAuthTokens,
  client: OAuthClientInformationMixed | undefined,
  fetchFn: FetchLike,
): Promise<RevocationOutcome> {
  try {
    const info = await discoverOAuthServerInfo(serverUrl, { fetchFn });
    // OAuth metadata (RFC 8414) names it; OpenID discovery documents may too, untyped.
    const endpoint = (info.authorizationServerMetadata as { revocation_endpoint?: unknown } | undefined)
      ?.revocation_endpoint;
    if (typeof endpoint !== 'string' || !client) return 'not supported';
    const hinted: Array<[string, string]> = [
      ...(tokens.refresh_token ? [[tokens.refresh_token, 'refresh_token'] as [string, string]] : []),
      [tokens.access_token, 'access_token'],
    ];
    for (const [token, hint] of hinted) {
      const response = await fetchFn(endpoint, revocationRequest(token, hint, client));
      // RFC 7009 §2.2: 200 also for a token the server no longer knows; anything else is a failure.
      if (!response.ok) return 'failed';
    }
    return 'revoked';
  } catch {
    return 'failed';
  }
}

/** The form POST of RFC 7009 §2.1, the client authenticated as it registered (secret in Basic or the body). */
function revocationRequest(token: string, hint: string, client: OAuthClientInformationMixed): RequestInit {
  const body = new URLSearchParams({ token, token_type_hint: hint });
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  const method = 'token_endpoint_auth_method' in client ? client.token_endpoint_auth_method : undefined;
  if (client.client_secret && method === 'client_secret_basic') {
    const basic = `${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`;
    headers.authorization = `Basic ${Buffer.from(basic).toString('base64')}`;
  } else {
    body.set('client_id', client.client_id);
    if (client.client_secret) body.set('client_secret', client.client_secret);
  }
  return { method: 'POST', headers, body };
}
