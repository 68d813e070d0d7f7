import type http from 'node:http';
import type { App, Receiver } from '@slack/bolt';
import { verifySlackRequest } from '@slack/bolt';
import type { Logger } from 'pino';
import type { HttpServer } from '../../http/server.ts';

const MAX_BODY = 1024 * 1024;

class BodyTooLarge extends Error {}

/**
 * The raw body as bytes, decoded once at the end: decoding chunk by chunk would break a multibyte
 * character that straddles two TCP chunks, and with it the signature of a legitimate request.
 */
function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        reject(new BodyTooLarge(`a Slack request body over ${MAX_BODY} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** A Bolt ack body as Slack expects it in the HTTP response. */
function respond(res: http.ServerResponse, response: unknown): void {
  if (response === undefined || response === '') res.writeHead(200).end();
  else if (typeof response === 'string') res.writeHead(200, { 'content-type': 'text/plain' }).end(response);
  else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(response));
}

/**
 * Slack's HTTP delivery on Countersign's own listener (`POST /slack/events`), so HTTP mode shares
 * the port with /healthz and /metrics behind one load balancer. Every request's signature is checked
 * before anything is parsed.
 *
 * Events API deliveries are answered only once Bolt has finished processing them: Bolt calls `ack()`
 * for an event *before* running its listeners (App.processEvent), so answering at `ack()` would tell
 * Slack "got it" before the work item is enqueued. A delivery whose processing fails is answered 500
 * and Slack retries it (X-Slack-Retry-Num). Slash commands and interactivity are answered at `ack()`
 * as usual: their listeners ack first, inside Slack's 3-second window.
 */
export class CountersignHttpReceiver implements Receiver {
  #app: App | undefined;
  readonly #signingSecret: string;
  readonly #log: Logger;

  constructor(options: { http: HttpServer; signingSecret: string; log: Logger; path?: string }) {
    this.#signingSecret = options.signingSecret;
    this.#log = options.log;
    options.http.route(options.path ?? '/slack/events', (req, res) => this.#handle(req, res));
  }

  init(app: App): void {
    this.#app = app;
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {}

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    let raw: string;
    try {
      raw = await readBody(req);
    } catch (error) {
      const tooLarge = error instanceof BodyTooLarge;
      this.#log.warn({ reason: (error as Error).message }, 'could not read a Slack request');
      if (!res.headersSent) res.writeHead(tooLarge ? 413 : 400).end();
      return;
    }
    try {
      verifySlackRequest({
        signingSecret: this.#signingSecret,
        body: raw,
        headers: {
          'x-slack-signature': String(req.headers['x-slack-signature'] ?? ''),
          'x-slack-request-timestamp': Number(req.headers['x-slack-request-timestamp'] ?? 0),
        },
      });
    } catch (error) {
      this.#log.warn({ reason: (error as Error).message }, 'rejected a Slack request with a bad signature');
      res.writeHead(401, { 'content-type': 'text/plain' }).end('invalid signature');
      return;
    }
    const type = String(req.headers['content-type'] ?? '');
    let body: Record<string, unknown>;
    try {
      if (type.includes('application/json')) {
        body = JSON.parse(raw) as Record<string, unknown>;
      } else {
        const form = Object.fromEntries(new URLSearchParams(raw));
        body = typeof form.payload === 'string' ? (JSON.parse(form.payload) as Record<string, unknown>) : form;
      }
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('malformed body');
      return;
    }
    if (body.type === 'url_verification') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ challenge: body.challenge }));
      return;
    }
    const isEvent = body.type === 'event_callback';
    let acked = false;
    let response: unknown;
    const retryNum = req.headers['x-slack-retry-num'];
    try {
      await this.#app?.processEvent({
        body,
        ...(retryNum
          ? { retryNum: Number(retryNum), retryReason: String(req.headers['x-slack-retry-reason'] ?? '') }
          : {}),
        ack: async (ackResponse?: unknown) => {
          if (acked) return;
          acked = true;
          if (isEvent) response = ackResponse;
          else respond(res, ackResponse);
        },
      });
      // Processed: the event's work item (if it makes one) is committed.
      if (isEvent && !res.headersSent) respond(res, response);
    } catch (error) {
      this.#log.error(
        { err: error, eventId: body.event_id, retryNum: retryNum ?? 0 },
        isEvent
          ? 'could not take in a Slack event; answering 500 so that Slack retries it'
          : 'Slack request handling failed',
      );
    }
    // Not acknowledged: Slack will retry, which is what we want when we could not enqueue.
    if (!res.headersSent) res.writeHead(500).end();
  }
}
