/**
 * Why a network connection could not be opened, in a person's words. Shared by everything that
 * reaches a service over the network (model providers, chat platforms): the clients report these as
 * "fetch failed" or "Connection error.", with the socket's code a cause or two down.
 */

/**
 * Socket and TLS codes that mean the connection was never opened, in the words a person reading the
 * turn's error needs. The SDKs report them all as "Connection error.", the code two causes down.
 */
const UNREACHABLE: Record<string, string> = {
  ENOTFOUND: 'name not found',
  EAI_AGAIN: 'name lookup failed (no DNS answer)',
  ECONNREFUSED: 'connection refused',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS: the certificate does not name this host',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS: self-signed certificate',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS: self-signed certificate in the chain',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS: certificate not trusted',
  CERT_HAS_EXPIRED: 'TLS: certificate expired',
};

/** Why the connection could not be opened, when a cause of `error` says so. */
export function whyUnreachable(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  for (
    let e: unknown = error;
    typeof e === 'object' && e !== null && !seen.has(e);
    e = (e as { cause?: unknown }).cause
  ) {
    seen.add(e);
    const members = e instanceof AggregateError ? e.errors : [e];
    for (const m of members) {
      const code = (m as { code?: unknown } | undefined)?.code;
      if (typeof code === 'string' && UNREACHABLE[code]) return UNREACHABLE[code];
    }
  }
  return undefined;
}
