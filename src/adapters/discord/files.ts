import type { Message } from 'discord.js';
import type { FileRef } from '../../core/work-item.ts';
import { readCapped } from '../../reply/read-capped.ts';

/** Discord's CDN hosts: attachments are served from them, signed, and need no token. */
const DISCORD_CDN_HOST = /^(cdn\.discordapp\.com|media\.discordapp\.net)$/;

/** A message's attachments as the work item records them (docs.discord.com: the attachment object). */
export function fileRefsOf(message: Pick<Message, 'attachments'>): FileRef[] {
  return [...message.attachments.values()].slice(0, 100).map((a) => ({
    id: a.id,
    name: (a.name || a.id).slice(0, 2000),
    size: a.size,
    ...(a.contentType ? { mimetype: a.contentType.slice(0, 300) } : {}),
    url: a.url,
  }));
}

/**
 * An attachment's bytes from Discord's CDN (or, where DISCORD_API_URL points elsewhere, that server:
 * a test's fake). No token is sent — CDN URLs are signed — and a URL or redirect anywhere else is
 * refused. At most `maxBytes + 1` bytes are read.
 */
export async function downloadAttachment(
  file: FileRef,
  apiOrigin: string | undefined,
  { maxBytes, signal }: { maxBytes: number; signal: AbortSignal },
): Promise<Buffer> {
  if (!file.url) throw new Error('Discord gave no URL for it');
  const url = new URL(file.url);
  const cdn = url.protocol === 'https:' && DISCORD_CDN_HOST.test(url.hostname);
  if (!cdn && url.origin !== apiOrigin) throw new Error(`its URL is on ${url.host}, not Discord's CDN`);
  const answer = await fetch(url, { redirect: 'error', signal });
  if (!answer.ok) throw new Error(`Discord's CDN answered ${answer.status}`);
  return readCapped(answer, maxBytes);
}
