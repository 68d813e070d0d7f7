import type http from 'node:http';
import { randomBytes } from 'node:crypto';

/** A file people shared, as the fake hosts it. */
interface HostedFile {
  id: string;
  name: string;
  bytes: Buffer;
  mimetype: string;
}

/** One request for a file's bytes, and whether it carried the bot token. */
export interface FileFetch {
  path: string;
  authorized: boolean;
}

/**
 * Slack's file hosting for shared files (docs.slack.dev/reference/objects/file-object, "Authentication
 * when accessing files"): `url_private_download` answers only with the bot token (`files:read`) in
 * `Authorization: Bearer`; without it Slack answers 200 with its HTML sign-in page, not an error. The
 * fake's `url_private_download` redirects once (302) to a files-origin path, which also wants the token:
 * a client that lets fetch follow the redirect loses the header and gets the sign-in page.
 */
export class SlackFileHost {
  readonly #files = new Map<string, HostedFile>();
  /** Every request for file bytes, in order. */
  readonly fetches: FileFetch[] = [];

  readonly origin: () => string;
  readonly team: () => string;
  readonly tokens: () => string[];

  constructor(origin: () => string, team: () => string, tokens: () => string[]) {
    this.origin = origin;
    this.team = team;
    this.tokens = tokens;
  }

  /** Hosts `bytes` and returns the file object a `file_share` message event carries. */
  host(name: string, bytes: Buffer, mimetype = 'text/plain'): Record<string, unknown> {
    const id = `F${randomBytes(5).toString('hex').toUpperCase()}`;
    this.#files.set(id, { id, name, bytes, mimetype });
    const base = `${this.origin()}/files-pri/${this.team()}-${id}`;
    return {
      id,
      created: Math.floor(Date.now() / 1000),
      name,
      title: name,
      mimetype,
      filetype: 'text',
      size: bytes.length,
      mode: 'hosted',
      url_private: `${base}/${encodeURIComponent(name)}`,
      url_private_download: `${base}/download/${encodeURIComponent(name)}`,
    };
  }

  /** Answers a GET of /files-pri/… or /files-origin/…; false when the path is not the host's. */
  handle(req: http.IncomingMessage, res: http.ServerResponse, path: string): boolean {
    const pri = /^\/files-pri\/[^/]+-(F[0-9A-F]+)\/(?:download\/)?[^/]+$/.exec(path);
    const origin = /^\/files-origin\/(F[0-9A-F]+)$/.exec(path);
    if (req.method !== 'GET' || (!pri && !origin)) return false;
    const authorized = this.tokens().some((t) => req.headers.authorization === `Bearer ${t}`);
    this.fetches.push({ path, authorized });
    const file = this.#files.get((pri ?? origin)![1]!);
    if (!authorized) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!DOCTYPE html><title>Sign in</title>');
    } else if (!file) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('file_not_found');
    } else if (pri) {
      res.writeHead(302, { location: `${this.origin()}/files-origin/${file.id}` }).end();
    } else {
      res.writeHead(200, { 'content-type': file.mimetype, 'content-length': file.bytes.length }).end(file.bytes);
    }
    return true;
  }
}
