import type http from 'node:http';

/** One request for an attachment's bytes, and whether it carried a token (it must not). */
export interface CdnFetch {
  path: string;
  authorization: string | undefined;
}

/**
 * Discord's attachment CDN for files people send (docs.discord.com, the attachment object: `url`,
 * `proxy_url`, `size`, `content_type`). URLs are signed; the CDN wants no token, and the fake records
 * whether one came anyway.
 */
export class FakeDiscordCdn {
  readonly #files = new Map<string, { bytes: Buffer; contentType: string }>();
  readonly fetches: CdnFetch[] = [];
  readonly #origin: () => string;
  #next = 1;

  constructor(origin: () => string) {
    this.#origin = origin;
  }

  /** Hosts `bytes` and returns the attachment object a MESSAGE_CREATE carries. */
  attachment(channelId: string, filename: string, bytes: Buffer, contentType = 'text/plain'): Record<string, unknown> {
    const id = `11${String(this.#next++).padStart(16, '0')}`;
    const path = `/cdn/attachments/${channelId}/${id}/${encodeURIComponent(filename)}`;
    this.#files.set(path, { bytes, contentType });
    const url = `${this.#origin()}${path}?ex=ffffffff&is=00000000&hm=signed`;
    return { id, filename, size: bytes.length, url, proxy_url: url, content_type: contentType };
  }

  /** Answers a GET of /cdn/attachments/…; false when the path is not the CDN's. */
  handle(req: http.IncomingMessage, res: http.ServerResponse, path: string): boolean {
    if (req.method !== 'GET' || !path.startsWith('/cdn/attachments/')) return false;
    this.fetches.push({ path, authorization: req.headers.authorization });
    const file = this.#files.get(path);
    if (!file) res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found');
    else res.writeHead(200, { 'content-type': file.contentType, 'content-length': file.bytes.length }).end(file.bytes);
    return true;
  }
}
