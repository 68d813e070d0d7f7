import type { FakeOAuthServer } from '../fakes/oauth/server.ts';

/** What a person's browser holds after following a Connect link, to bring back to the callback. */
export interface ConnectBrowser {
  /** The Connect page's text. */
  page: string;
  code: string;
  state: string;
  /** The `Cookie` header the browser sends back to the bot ('' when it was given none). */
  cookie: string;
  /** The cookie's value, as the callback route hands it to `complete()`. */
  browserSecrets: string[];
}

/**
 * A person's browser following a Connect link: the bot's own Connect page (which names whose chat
 * account it is for), its button (whose answer sets the browser's cookie, kept as a cookie jar would),
 * then the sign-in at the fake server, which sends the browser back with a code.
 */
export async function followConnectLink(
  appPort: number,
  link: string,
  fake: FakeOAuthServer,
  user: string,
): Promise<ConnectBrowser> {
  const s = new URL(link).searchParams.get('s') ?? '';
  const page = await (await fetch(`http://127.0.0.1:${appPort}/oauth/start?s=${encodeURIComponent(s)}`)).text();
  const go = await confirmOnConnectPage(appPort, s);
  const location = go.headers.get('location');
  if (go.status !== 303 || !location) throw new Error(`the Connect page did not go on: ${go.status}`);
  const jar = go.headers.getSetCookie().map((line) => line.split(';')[0]!);
  const { code, state } = await fake.approve(new URL(location), user);
  return {
    page,
    code,
    state: state ?? '',
    cookie: jar.join('; '),
    browserSecrets: jar.map((pair) => pair.slice(pair.indexOf('=') + 1)),
  };
}

/** The Connect page's button: a POST of the link's state, answered with where to sign in. */
export function confirmOnConnectPage(appPort: number, s: string, headers: Record<string, string> = {}) {
  return fetch(`http://127.0.0.1:${appPort}/oauth/start`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams({ s }).toString(),
    redirect: 'manual',
  });
}

/** The browser arriving back at the bot's callback with what the authorization server sent, and its cookie. */
export async function returnToCallback(
  appPort: number,
  query: { code: string; state: string },
  cookie = '',
): Promise<{ status: number; page: string; setCookie: string[] }> {
  const url = new URL(`http://127.0.0.1:${appPort}/oauth/callback`);
  url.searchParams.set('code', query.code);
  url.searchParams.set('state', query.state);
  const res = await fetch(url, { headers: cookie ? { cookie } : {} });
  return { status: res.status, page: await res.text(), setCookie: res.headers.getSetCookie() };
}
