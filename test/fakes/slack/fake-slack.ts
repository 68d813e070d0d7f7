import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/**
 * A fake Slack for tests: the Web API methods Countersign calls (form or JSON bodies, bearer
 * tokens, `{ok:false,error}` answers, 429 + Retry-After when a method's per-workspace budget is
 * spent), apps.connections.open and a Socket Mode WebSocket that sends `hello`, delivers envelopes
 * and waits for their acks, and signed HTTP delivery for HTTP mode.
 */
export interface SlackMessage {
  channel: string;
  ts: string;
  thread_ts?: string;
  text: string;
  blocks: unknown[];
  edits: number;
  ephemeralFor?: string;
}

export interface FakeSlackOptions {
  botToken?: string;
  appToken?: string;
  team?: string;
  /** Calls a method may take per minute per workspace before it answers 429. */
  perMinute?: Record<string, number>;
}

export class FakeSlack {
  readonly botToken: string;
  readonly appToken: string;
  readonly team: string;
  readonly botUserId = 'U0BOT00001';
  readonly botId = 'B0BOT00001';
  readonly messages: SlackMessage[] = [];
  /** Every Web API call: method and minute (for "calls per minute" assertions). */
  readonly calls: Array<{ method: string; at: number; status: number }> = [];
  url = '';
  readonly #server: http.Server;
  readonly #wss: WebSocketServer;
  readonly #sockets = new Set<WebSocket>();
  readonly #pendingAcks = new Map<string, (ack: unknown) => void>();
  readonly #perMinute: Record<string, number>;
  readonly #failNext = new Map<string, { count: number; retryAfter: number }>();
  #tsCounter = 0;

  private constructor(options: FakeSlackOptions) {
    this.botToken = options.botToken ?? 'xoxb-fake-bot-token';
    this.appToken = options.appToken ?? 'xapp-1-fake-app-token';
    this.team = options.team ?? 'T0TEAM0001';
    this.#perMinute = options.perMinute ?? {};
    this.#server = http.createServer((req, res) => void this.#onRequest(req, res));
    this.#wss = new WebSocketServer({ noServer: true });
    this.#server.on('upgrade', (req, socket, head) => {
      if (!req.url?.startsWith('/socket')) return socket.destroy();
      this.#wss.handleUpgrade(req, socket, head, (ws) => this.#onSocket(ws));
    });
  }

  static async start(options: FakeSlackOptions = {}): Promise<FakeSlack> {
    const fake = new FakeSlack(options);
    await new Promise<void>((resolve) => fake.#server.listen(0, '127.0.0.1', resolve));
    fake.url = `http://127.0.0.1:${(fake.#server.address() as AddressInfo).port}`;
    return fake;
  }

  /** The Web API base to give the SDKs (`slackApiUrl`). */
  get apiUrl(): string {
    return `${this.url}/api/`;
  }

  get connected(): number {
    return this.#sockets.size;
  }

  failNext(method: string, count: number, retryAfterSeconds: number): void {
    this.#failNext.set(method, { count, retryAfter: retryAfterSeconds });
  }

  #nextTs(): string {
    this.#tsCounter += 1;
    return `${Math.floor(Date.now() / 1000)}.${String(this.#tsCounter).padStart(6, '0')}`;
  }

  // --- Web API ----------------------------------------------------------------------------------

  async #onRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
      res.end(JSON.stringify(body));
    };
    const method = (req.url ?? '').replace(/^\/api\//, '').split('?')[0] ?? '';
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const type = String(req.headers['content-type'] ?? '');
    const args: Record<string, unknown> = type.includes('json')
      ? (JSON.parse(raw || '{}') as Record<string, unknown>)
      : Object.fromEntries(new URLSearchParams(raw));
    for (const key of ['blocks', 'attachments']) {
      if (typeof args[key] === 'string') args[key] = JSON.parse(args[key] as string);
    }
    const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '') || String(args.token ?? '');
    const record = (status: number) => this.calls.push({ method, at: Date.now(), status });
    const wantApp = method === 'apps.connections.open';
    if (token !== (wantApp ? this.appToken : this.botToken)) {
      record(200);
      return reply(200, { ok: false, error: wantApp ? 'not_allowed_token_type' : 'invalid_auth' });
    }
    const forced = this.#failNext.get(method);
    const limit = this.#perMinute[method];
    const lastMinute = this.calls.filter(
      (c) => c.method === method && c.status === 200 && c.at > Date.now() - 60_000,
    ).length;
    if ((forced && forced.count > 0) || (limit !== undefined && lastMinute >= limit)) {
      if (forced && forced.count > 0) forced.count -= 1;
      record(429);
      return reply(429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(forced?.retryAfter ?? 1) });
    }
    record(200);
    switch (method) {
      case 'auth.test':
        return reply(200, {
          ok: true,
          url: 'https://fake.slack.com/',
          team: 'Fake',
          user: 'countersign',
          team_id: this.team,
          user_id: this.botUserId,
          bot_id: this.botId,
          is_enterprise_install: false,
        });
      case 'apps.connections.open':
        return reply(200, { ok: true, url: `${this.url.replace('http', 'ws')}/socket?ticket=${randomUUID()}` });
      case 'chat.postMessage': {
        const message: SlackMessage = {
          channel: String(args.channel),
          ts: this.#nextTs(),
          ...(args.thread_ts ? { thread_ts: String(args.thread_ts) } : {}),
          text: String(args.text ?? ''),
          blocks: (args.blocks as unknown[]) ?? [],
          edits: 0,
        };
        this.messages.push(message);
        return reply(200, {
          ok: true,
          channel: message.channel,
          ts: message.ts,
          message: { type: 'message', text: message.text, ts: message.ts, bot_id: this.botId, user: this.botUserId },
        });
      }
      case 'chat.update': {
        const message = this.messages.find((m) => m.channel === String(args.channel) && m.ts === String(args.ts));
        if (!message) return reply(200, { ok: false, error: 'message_not_found' });
        message.text = String(args.text ?? '');
        message.blocks = (args.blocks as unknown[]) ?? [];
        message.edits += 1;
        return reply(200, { ok: true, channel: message.channel, ts: message.ts, text: message.text });
      }
      case 'chat.postEphemeral': {
        const message: SlackMessage = {
          channel: String(args.channel),
          ts: this.#nextTs(),
          text: String(args.text ?? ''),
          blocks: [],
          edits: 0,
          ephemeralFor: String(args.user),
          ...(args.thread_ts ? { thread_ts: String(args.thread_ts) } : {}),
        };
        this.messages.push(message);
        return reply(200, { ok: true, message_ts: message.ts });
      }
      default:
        return reply(200, { ok: false, error: 'unknown_method' });
    }
  }

  /** The visible text of the bot's messages in a channel (a thread, when given), oldest first. */
  textIn(channel: string, thread?: string): string[] {
    return this.messages
      .filter((m) => m.channel === channel && !m.ephemeralFor && (thread === undefined || m.thread_ts === thread))
      .map((m) => m.text);
  }

  // --- Socket Mode ------------------------------------------------------------------------------

  #onSocket(ws: WebSocket): void {
    this.#sockets.add(ws);
    ws.on('close', () => this.#sockets.delete(ws));
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as { envelope_id?: string; payload?: unknown };
      if (message.envelope_id) this.#pendingAcks.get(message.envelope_id)?.(message.payload);
    });
    ws.send(
      JSON.stringify({
        type: 'hello',
        num_connections: this.#sockets.size,
        debug_info: { host: 'fake-slack', build_number: 1, approximate_connection_time: 18060 },
        connection_info: { app_id: 'A0FAKEAPP1' },
      }),
    );
  }

  /** Sends an envelope over Socket Mode; resolves with the ack's payload (rejects if none comes). */
  deliver(
    type: 'events_api' | 'slash_commands' | 'interactive',
    payload: unknown,
    options: { retryAttempt?: number } = {},
  ): Promise<unknown> {
    const socket = [...this.#sockets][0];
    if (!socket) return Promise.reject(new Error('no Socket Mode connection'));
    const envelope_id = randomUUID();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pendingAcks.delete(envelope_id);
        reject(new Error(`no ack for envelope ${envelope_id}`));
      }, 10_000);
      this.#pendingAcks.set(envelope_id, (ack) => {
        clearTimeout(timer);
        this.#pendingAcks.delete(envelope_id);
        resolve(ack);
      });
      socket.send(
        JSON.stringify({
          envelope_id,
          type,
          payload,
          accepts_response_payload: type !== 'events_api',
          retry_attempt: options.retryAttempt ?? 0,
          retry_reason: options.retryAttempt ? 'timeout' : '',
        }),
      );
    });
  }

  // --- HTTP delivery ----------------------------------------------------------------------------

  /** POSTs a signed delivery to an HTTP-mode app, as Slack does. */
  async post(
    url: string,
    body: { json: unknown } | { form: Record<string, string> },
    options: { signingSecret: string; retryNum?: number; badSignature?: boolean },
  ): Promise<{ status: number; text: string }> {
    const raw = 'json' in body ? JSON.stringify(body.json) : new URLSearchParams(body.form).toString();
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = `v0=${createHmac('sha256', options.signingSecret).update(`v0:${timestamp}:${raw}`).digest('hex')}`;
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'json' in body ? 'application/json' : 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': timestamp,
        'x-slack-signature': options.badSignature ? `v0=${'0'.repeat(64)}` : signature,
        ...(options.retryNum
          ? { 'x-slack-retry-num': String(options.retryNum), 'x-slack-retry-reason': 'http_timeout' }
          : {}),
      },
      body: raw,
    });
    return { status: res.status, text: await res.text() };
  }

  async close(): Promise<void> {
    for (const ws of this.#sockets) ws.terminate();
    this.#wss.close();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
