import { createHash, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import net from 'node:net';

/** Whether `address` (as Node reports a peer) is this machine's loopback: 127.0.0.0/8, ::1, ::ffff:127.x. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.toLowerCase().startsWith('::ffff:') ? address.slice(7) : address;
  if (net.isIPv4(v4)) return v4.split('.')[0] === '127';
  if (!net.isIPv6(address)) return false;
  // Any spelling of ::1 (0:0:0:0:0:0:0:1, ::0001, …) — BlockList compares parsed addresses.
  const loopback = new net.BlockList();
  loopback.addAddress('::1', 'ipv6');
  return loopback.check(address, 'ipv6');
}

/** Compares in time independent of where the strings differ, and of their lengths (both are hashed). */
function sameToken(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

export type MetricsAccess = { allowed: true } | { allowed: false; status: 401 | 403; error: string };

/**
 * Who may read /metrics. With a token: whoever sends `Authorization: Bearer <token>`. Without one:
 * this machine only — metrics name tools, providers and traffic, and the listener binds 0.0.0.0 by
 * default. A request relayed by a local reverse proxy (it carries Forwarded / X-Forwarded-For) came
 * from elsewhere, so it is not treated as loopback.
 */
export function checkMetricsAccess(req: http.IncomingMessage, token: string | undefined): MetricsAccess {
  if (token !== undefined) {
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (match?.[1] !== undefined && sameToken(match[1], token)) return { allowed: true };
    return { allowed: false, status: 401, error: 'unauthorized: send Authorization: Bearer <METRICS_TOKEN>' };
  }
  const relayed = req.headers.forwarded !== undefined || req.headers['x-forwarded-for'] !== undefined;
  if (!relayed && isLoopbackAddress(req.socket.remoteAddress)) return { allowed: true };
  return {
    allowed: false,
    status: 403,
    error: 'forbidden: /metrics answers only this machine; set METRICS_TOKEN to let a scraper in with a bearer token',
  };
}
