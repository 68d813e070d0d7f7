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
