import type { WebClient } from '@slack/web-api';
import type { FileRef } from '../../core/work-item.ts';
import { readCapped } from '../../reply/read-capped.ts';

/** Hosts Slack serves and takes files on: files.slack.com, files-origin.slack.com, GovSlack's. */
const SLACK_FILE_HOST = /(^|\.)slack(-gov)?\.com$/;

/** Redirects one download may follow (url_private_download answers one or two). */
const MAX_REDIRECTS = 5;

/** A file as a Slack `message` event carries it (file_share, docs.slack.dev/reference/objects/file-object). */
export interface SlackEventFile {
  id: string;
  name?: string;
  title?: string;
  size?: number;
  mimetype?: string;
  mode?: string;
  url_private?: string;
  url_private_download?: string;
}

/** The files of a message as the work item records them; deleted files (`tombstone`) and links to other services are left out. */
export function fileRefsOf(files: readonly SlackEventFile[] | undefined): FileRef[] {
  return (files ?? [])
    .filter((f) => f.id && f.mode !== 'tombstone' && f.mode !== 'external')
    .slice(0, 100)
    .map((f) => {
      const url = f.url_private_download ?? f.url_private;
      return {
        id: f.id,
        name: (f.name ?? f.title ?? f.id).slice(0, 2000),
        ...(typeof f.size === 'number' && f.size >= 0 ? { size: f.size } : {}),
        ...(f.mimetype ? { mimetype: f.mimetype.slice(0, 300) } : {}),
        ...(url ? { url } : {}),
      };
    });
}

/** Slack's own file hosts over https, or where this client's API calls go (SLACK_API_URL: a test's fake, GovSlack). */
function isSlackHost(url: URL, apiOrigin: string): boolean {
  return (url.protocol === 'https:' && SLACK_FILE_HOST.test(url.hostname)) || url.origin === apiOrigin;
}

/**
 * Downloads a file a person shared (`files:read`): `url_private_download` with the bot token, its
 * redirects followed by hand because fetch drops the Authorization header on a redirect to another
 * host — and it must, since the token may go to Slack's hosts only. A URL or a redirect off Slack's
 * hosts is refused before anything is sent. At most `maxBytes + 1` bytes are read.
 */
export async function downloadSlackFile(
  file: FileRef,
  token: string,
  apiOrigin: string,
  { maxBytes, signal }: { maxBytes: number; signal: AbortSignal },
): Promise<Buffer> {
  if (!file.url) throw new Error('Slack gave no download URL for it');
  let url = new URL(file.url);
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    if (!isSlackHost(url, apiOrigin)) throw new Error(`its URL is on ${url.host}, not one of Slack's file hosts`);
    const answer = await fetch(url, { headers: { authorization: `Bearer ${token}` }, redirect: 'manual', signal });
    const location = answer.headers.get('location');
    if (answer.status >= 300 && answer.status < 400 && location) {
      await answer.body?.cancel();
      url = new URL(location, url);
      continue;
    }
    if (!answer.ok) throw new Error(`Slack answered ${answer.status}`);
    // Without the token (or without files:read) Slack answers 200 with its sign-in page.
    if (answer.headers.get('content-type')?.startsWith('text/html') && !file.mimetype?.startsWith('text/html'))
      throw new Error('Slack answered with its sign-in page; does the app have the files:read scope?');
    return readCapped(answer, maxBytes);
  }
  throw new Error(`Slack redirected it more than ${MAX_REDIRECTS} times`);
}

/** The slice of the Web API reading one message needs (conversations.replies and .history). */
type MessageReader = Pick<WebClient['conversations'], 'replies' | 'history'>;

/**
 * The files of the message `ts` in `channel`, read back from Slack because an `app_mention` event
 * carries none. A reply in a thread is found among conversations.replies of its thread (the parent
 * may come first whatever the range, so the message is picked by its ts); a top-level message is
 * conversations.history's one message at `ts` (latest=ts, inclusive). Scopes: `*:history`.
 */
export async function filesOfMessage(
  conversations: MessageReader,
  channel: string,
  thread: string | undefined,
  ts: string,
): Promise<FileRef[]> {
  const range = { channel, latest: ts, inclusive: true };
  const read =
    thread && thread !== ts
      ? await conversations.replies({ ...range, ts: thread, oldest: ts, limit: 2 })
      : await conversations.history({ ...range, limit: 1 });
  const message = read.messages?.find((m) => m.ts === ts);
  return fileRefsOf(message?.files as SlackEventFile[] | undefined);
}
