import { describe, expect, it } from 'vitest';
import {
  clearConnectCookie,
  connectCookieName,
  cookieValues,
  newBrowserSecret,
  sameBrowser,
  sameOriginPost,
  setConnectCookie,
} from '../../src/connections/browser-binding.ts';

describe('binding a Connect link to the browser that confirmed it', () => {
  it('matches only the secret whose hash was stored, and never a state no browser confirmed', () => {
    const { secret, hash } = newBrowserSecret();
    expect(sameBrowser(hash, [secret])).toBe(true);
    expect(sameBrowser(hash, [newBrowserSecret().secret])).toBe(false);
    expect(sameBrowser(hash, [])).toBe(false);
    expect(sameBrowser(null, [secret])).toBe(false);
    expect(sameBrowser(hash, ['planted', secret])).toBe(true);
  });

  it('names the cookie per link, with the __Host- prefix and Secure only on https', () => {
    expect(connectCookieName('s1', true)).toMatch(/^__Host-countersign-connect-[0-9a-f]{16}$/);
    expect(connectCookieName('s1', false)).toMatch(/^countersign-connect-[0-9a-f]{16}$/);
    expect(connectCookieName('s1', false)).not.toBe(connectCookieName('s2', false));
    expect(setConnectCookie('n', 'v', 599.2, false)).toBe('n=v; Max-Age=600; Path=/; HttpOnly; SameSite=Lax');
    expect(clearConnectCookie('n', true)).toBe('n=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax; Secure');
  });

  it('reads every value the Cookie header carries under the name', () => {
    expect(cookieValues('a=1; n=x; n2=y; n=z', 'n')).toEqual(['x', 'z']);
    expect(cookieValues(undefined, 'n')).toEqual([]);
    expect(cookieValues('n=', 'n')).toEqual([]);
  });

  it('takes a confirmation only from the bot’s own page, or from a client that is no browser', () => {
    const origin = 'https://bot.example.com';
    expect(sameOriginPost({ origin, 'sec-fetch-site': 'same-origin' }, origin)).toBe(true);
    expect(sameOriginPost({}, origin)).toBe(true);
    expect(sameOriginPost({ origin: 'https://evil.example' }, origin)).toBe(false);
    expect(sameOriginPost({ origin: 'null' }, origin)).toBe(false);
    expect(sameOriginPost({ origin, 'sec-fetch-site': 'cross-site' }, origin)).toBe(false);
  });
});
