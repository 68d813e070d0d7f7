import type { FakeOAuthServer } from '../fakes/oauth/server.ts';

/**
 * A person's browser following a Connect link: the bot's own Connect page (which names whose chat
 * account it is for), its button, then the sign-in at the fake server, which sends the browser back
 * with a code. Returns the page's text and what the server sent back.
 */
export async function followConnectLink(
  appPort: number,
  link: string,
  fake: FakeOAuthServer,
  user: string,
): Promise<{ page: string; code: string; state: string }> {
  const s = new URL(link).searchParams.get('s') ?? '';
  const page = await (await fetch(`http://127.0.0.1:${appPort}/oauth/start?s=${encodeURIComponent(s)}`)).text();
  const go = await fetch(`http://127.0.0.1:${appPort}/oauth/start`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ s }).toString(),
    redirect: 'manual',
  });
  const location = go.headers.get('location');
  if (go.status !== 303 || !location) throw new Error(`the Connect page did not go on: ${go.status}`);
  const { code, state } = await fake.approve(new URL(location), user);
  return { page, code, state: state ?? '' };
}
