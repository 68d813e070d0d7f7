import type { CallbackResult } from './service.ts';

/**
 * The page a person's browser shows after the sign-in: "Connected — you can go back to <their chat>"
 * and nothing else (no token, no state, no account detail), or why it did not work.
 */
export function callbackPage(
  result: CallbackResult,
  /** The chat the person came from, as people call it (its platform's display name). */
  chatName: (platform: string) => string,
): { status: number; html: string } {
  const [status, title, line] = result.ok
    ? [200, 'Connected', `Connected to ${result.server} — you can go back to ${chatName(result.person.platform)}.`]
    : [400, 'Not connected', result.message];
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>${escape(title)}</title></head><body style="font-family:sans-serif;margin:3em"><p>${escape(line)}</p></body></html>`;
  return { status, html };
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The Connect page: whose chat account the sign-in is for, and a button that goes on to it. A link
 * that is used, expired or not ours says so instead.
 */
export function startPage(
  link: { server: string; personLabel: string } | undefined,
  state: string,
  /** Why there is no link to show: 'another-site' when the confirming POST did not come from this page. */
  refusal?: 'another-site',
): { status: number; html: string } {
  if (refusal === 'another-site') {
    return page(
      403,
      'Not confirmed',
      'This sign-in was not confirmed on the Connect page itself, so it did not go on. Open the Connect link you were sent in the chat and confirm there.',
    );
  }
  if (!link) {
    return page(
      400,
      'Not a Connect link',
      'This Connect link was used already, has expired, or is not one I made. Ask for a new one in the chat.',
    );
  }
  const body = [
    `<p>This connects <b>${escape(link.server)}</b> for <b>${escape(link.personLabel)}</b>: what the bot does there for that chat account will run as the account you sign in with.</p>`,
    '<p>If you did not ask for this link in the chat yourself, close this page: someone else would act as you.</p>',
    `<form method="post"><input type="hidden" name="s" value="${escape(state)}"><button type="submit">Continue to sign in</button></form>`,
  ].join('');
  return { status: 200, html: shell(`Connect ${link.server}`, body) };
}

function page(status: number, title: string, line: string): { status: number; html: string } {
  return { status, html: shell(title, `<p>${escape(line)}</p>`) };
}

function shell(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escape(title)}</title></head><body style="font-family:sans-serif;margin:3em">${body}</body></html>`;
}
