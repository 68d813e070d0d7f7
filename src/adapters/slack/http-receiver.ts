import type http from 'node:http';
import type { App, Receiver } from '@slack/bolt';
import { verifySlackRequest } from '@slack/bolt';
import type { Logger } from 'pino';
import type { HttpServer } from '../../http/server.ts';

const MAX_BODY = 1024 * 1024;

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => {
      raw += chunk.toString('utf8');
      if (raw.length > MAX_BODY) reject(new Error('body too large'));
    });
    req.on('end', () => resolve(raw));
    req.on('error', reject);
  });
}

/**
 * Slack's HTTP delivery on Countersign's own listener (`POST /slack/events`), so HTTP mode shares
 * the port with /healthz and /metrics behind one load balancer. Every request's signature is checked
 * before anything is parsed; the response (Slack's ack) is sent once Bolt acks — after the message
 * is durably enqueued, so a request we could not take is retried by Slack instead of lost.
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
    const raw = await readBody(req);
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
    if (type.includes('application/json')) {
      body = JSON.parse(raw) as Record<string, unknown>;
    } else {
      const form = Object.fromEntries(new URLSearchParams(raw));
      body = typeof form.payload === 'string' ? (JSON.parse(form.payload) as Record<string, unknown>) : form;
    }
    if (body.type === 'url_verification') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ challenge: body.challenge }));
      return;
    }
    let acked = false;
    const retryNum = req.headers['x-slack-retry-num'];
    try {
      await this.#app?.processEvent({
        body,
        ...(retryNum
          ? { retryNum: Number(retryNum), retryReason: String(req.headers['x-slack-retry-reason'] ?? '') }
          : {}),
        ack: async (response?: unknown) => {
          if (acked) return;
          acked = true;
          if (response === undefined || response === '') res.writeHead(200).end();
          else if (typeof response === 'string') res.writeHead(200, { 'content-type': 'text/plain' }).end(response);
          else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(response));
        },
      });
    } catch (error) {
      this.#log.error({ err: error }, 'Slack event handling failed');
    }
    // Not acknowledged: Slack will retry, which is what we want when we could not enqueue.
    if (!acked && !res.headersSent) res.writeHead(500).end();
  }
}
