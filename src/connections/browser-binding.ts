import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { stateHash } from './store.ts';

/**
 * Binds a Connect link's sign-in to the browser that confirmed it on the Connect page (issue #47
 * §3; RFC 6749 §10.12, RFC 9700 §4.7): the confirming POST gets a random cookie, only its SHA-256
 * is stored with the state, and the callback completes only when the browser brings the cookie
 * back. Without it, whoever holds a state could send its sign-in URL to someone else, whose account
 * would then be stored as the state's person (OAuth login CSRF).
 */

/** A fresh browser secret (the cookie's value) and the hash stored with the state. */
export function newBrowserSecret(): { secret: string; hash: string } {
  const secret = randomBytes(32).toString('base64url');
  return { secret, hash: browserSecretHash(secret) };
}

function browserSecretHash(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * Whether one of the cookie values the browser sent is the one the state was confirmed with.
 * A state never confirmed (no stored hash) matches nothing: the state alone is never enough.
 */
export function sameBrowser(storedHash: string | null | undefined, secrets: readonly string[]): boolean {
  if (!storedHash) return false;
  const stored = Buffer.from(storedHash, 'hex');
  // Every candidate is compared, constant time each, so timing says nothing of which one matched.
  let matched = false;
  for (const secret of secrets) {
    const candidate = Buffer.from(browserSecretHash(secret), 'hex');
    if (candidate.length === stored.length && timingSafeEqual(candidate, stored)) matched = true;
  }
  return matched;
}

/**
 * The cookie's name, one per Connect link so two sign-ins in one browser do not clobber each other.
 * `__Host-` (Secure, Path=/, no Domain) when the bot is on https: a sibling subdomain cannot plant it.
 */
export function connectCookieName(rawState: string, secure: boolean): string {
  return `${secure ? '__Host-' : ''}countersign-connect-${stateHash(rawState).slice(0, 16)}`;
}

function attributes(secure: boolean): string {
  // Lax: the authorization server's redirect back is a top-level GET from another site, which Lax
  // cookies go along with; a cross-site POST or subresource does not carry it.
  return `Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** The Set-Cookie header of the confirming POST. */
export function setConnectCookie(name: string, secret: string, maxAgeSeconds: number, secure: boolean): string {
  return `${name}=${secret}; Max-Age=${Math.max(1, Math.ceil(maxAgeSeconds))}; ${attributes(secure)}`;
}

/** The Set-Cookie header that clears the cookie once the callback has used it (or refused it). */
export function clearConnectCookie(name: string, secure: boolean): string {
  return `${name}=; Max-Age=0; ${attributes(secure)}`;
}

/** Every value the Cookie header carries under `name` (a planted duplicate must not hide the real one). */
export function cookieValues(header: string | undefined, name: string): string[] {
  if (!header) return [];
  return header.split(';').flatMap((pair) => {
    const at = pair.indexOf('=');
    if (at < 0 || pair.slice(0, at).trim() !== name) return [];
    const value = pair.slice(at + 1).trim();
    return value ? [value] : [];
  });
}

/**
 * Whether a POST to the Connect page came from the page itself. A browser sends `Origin` (and
 * `Sec-Fetch-Site`) with a form POST; another site's auto-submitting form would otherwise confirm a
 * link in its visitor's browser and get the cookie set there. A client that sends neither is not a
 * browser another site can drive.
 */
export function sameOriginPost(headers: Record<string, string | string[] | undefined>, publicOrigin: string): boolean {
  const site = headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin') return false;
  const origin = headers.origin;
  if (typeof origin === 'string' && origin !== publicOrigin) return false;
  return true;
}
