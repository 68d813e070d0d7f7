/**
 * A fake Slack for tests, one loopback HTTP server: the Web API under `/api/<method>` (form or
 * JSON bodies, bearer tokens, Slack's response shapes and errors, per-workspace rate limits with
 * 429 + Retry-After), Socket Mode on `/link/` (hello, envelopes, acks, disconnect), and helpers
 * that deliver events to an HTTP-mode app signed like Slack. The real @slack/bolt App runs
 * against it with `clientOptions: { slackApiUrl: fake.apiUrl }` — see README.md.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { parseCall, readBody, readBytes, uploadedBytes } from './body.ts';
import {
  deliverWithRetries,
  postToApp,
  type DeliveryAttempt,
  type HttpDelivery,
  type HttpDeliveryOptions,
  type HttpDeliveryResult,
  type RetryPolicy,
} from './http-delivery.ts';
import { SlackRateLimiter, type CallRecord } from './rate-limiter.ts';
import { SocketModeServer, type DeliverOptions, type SocketAck, type SocketEnvelope } from './socket-mode.ts';
import { METHODS, type CallContext, type Workspace } from './web-api.ts';
import { SlackWorld, type SharedFile, type StoredMessage } from './world.ts';
import { checkMessage } from './message-rules.ts';
import { SlackFileHost } from './file-host.ts';

export type { CallRecord } from './rate-limiter.ts';
export type { DeliveryAttempt, RetryPolicy } from './http-delivery.ts';
export type { SocketAck, SocketEnvelope } from './socket-mode.ts';
export type { SharedFile, StoredMessage } from './world.ts';
export type { Workspace } from './web-api.ts';

/**
 * How the fake answers a Web API call it was told to fail (`failNext`), instead of running it. Slack
 * reports most errors as HTTP 200 `{ok:false, error}` (`fatal_error`, `internal_error`,
 * `service_unavailable`, `request_timeout`); during an incident its edge answers 5xx. `status`
 * defaults to 200; the body is always `{ok:false, error}`.
 */
export interface ForcedFailure {
  error: string;
  status?: number;
}

export interface FakeSlackOptions {
  /** Workspaces and their bot tokens; the first is the default. One workspace when omitted. */
  workspaces?: Array<Partial<Workspace> & { team: string; botToken: string }>;
  /** Shorthand for a single workspace's bot token. */
  botToken?: string;
  team?: string;
  /** The app-level token (xapp-…) apps.connections.open requires. */
  appToken?: string;
  /** Per-minute budgets per method, applied in each workspace separately (e.g. `{'chat.update': 50}`). */
  perMinute?: Record<string, number>;
  /** Whether chat.startStream / appendStream / stopStream exist. Default true. */
  streaming?: boolean;
  /** Whether the app is declared as an agent (agent sessions allowed). Default true. */
  agent?: boolean;
  /** How often the Socket Mode server pings clients, as Slack does; 0 turns pings off. Default 10 s. */
  pingIntervalMs?: number;
  /**
   * The bot token's scopes. When given, the methods that check them (files.*: `files:write`) answer
   * `missing_scope` without it; when omitted, no scope is checked.
   */
  scopes?: string[];
}

export class FakeSlack {
  readonly appToken: string;
  readonly workspaces: Workspace[];
  readonly botUserId = 'U0BOT00001';
  readonly botId = 'B0BOT00001';
  readonly appId = 'A0FAKEAPP1';
  readonly world = new SlackWorld();
  readonly rateLimits: SlackRateLimiter;
  readonly socketMode: SocketModeServer;
  /** Whether the streaming methods exist; flip it to test an adapter's fallback. */
  streaming: boolean;
  /** Whether the app is declared as an agent: otherwise agents.sessions.* refuse (flip it to test fallbacks). */
  agent: boolean;
  /** The bot token's scopes, when checked (see `FakeSlackOptions.scopes`). */
  scopes: Set<string> | undefined;
  url = '';
  /** Every response_url post, in order: what a person saw in answer to their command. */
  readonly responses: Array<{ path: string; body: Record<string, unknown> }> = [];
  readonly #server: http.Server;
  readonly #failures = new Map<string, Array<Required<ForcedFailure>>>();
  #responseUrls = 0;
  readonly #actionUrls = new Map<string, { channel: string; ts: string; uses: number; issuedAt: number }>();

  /** Files people shared (`files.host(name, bytes)` gives the event's file object) and who fetched them. */
  readonly files = new SlackFileHost(
    () => this.url,
    () => this.team,
    () => this.workspaces.map((w) => w.botToken),
  );

  private constructor(options: FakeSlackOptions) {
    this.appToken = options.appToken ?? 'xapp-1-A0FAKEAPP1-1-fakeapptoken';
    this.workspaces = (
      options.workspaces ?? [
        { team: options.team ?? 'T0TEAM0001', botToken: options.botToken ?? 'xoxb-fake-bot-token' },
      ]
    ).map((w, i) => ({ name: w.name ?? `fake-${i + 1}`, team: w.team, botToken: w.botToken }));
    this.rateLimits = new SlackRateLimiter(options.perMinute);
    this.streaming = options.streaming ?? true;
    this.agent = options.agent ?? true;
    this.scopes = options.scopes ? new Set(options.scopes) : undefined;
    this.socketMode = new SocketModeServer({ appId: this.appId, pingIntervalMs: options.pingIntervalMs ?? 10_000 });
    this.#server = http.createServer((req, res) => {
      this.#onRequest(req, res).catch((error: unknown) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ok: false, error: 'fatal_error', detail: String(error) }));
      });
    });
    this.#server.on('upgrade', (req, socket, head) => this.socketMode.handleUpgrade(req, socket, head));
  }

  static async start(options: FakeSlackOptions = {}): Promise<FakeSlack> {
    const fake = new FakeSlack(options);
    await new Promise<void>((resolve) => fake.#server.listen(0, '127.0.0.1', resolve));
    fake.url = `http://127.0.0.1:${(fake.#server.address() as AddressInfo).port}`;
    fake.socketMode.setBaseUrl(fake.url);
    return fake;
  }

  /** The Web API base to give the SDKs as `slackApiUrl` (it must end with a slash). */
  /** The configuration that points Countersign's Slack adapter (Socket Mode) at this fake. */
  env(extra: Record<string, string> = {}): Record<string, string> {
    return { SLACK_BOT_TOKEN: this.botToken, SLACK_APP_TOKEN: this.appToken, SLACK_API_URL: this.apiUrl, ...extra };
  }

  get apiUrl(): string {
    return `${this.url}/api/`;
  }

  /** The first workspace's bot token. */
  get botToken(): string {
    return this.#first.botToken;
  }

  /** The first workspace's team id. */
  get team(): string {
    return this.#first.team;
  }

  get #first(): Workspace {
    const first = this.workspaces[0];
    if (!first) throw new Error('FakeSlack needs at least one workspace');
    return first;
  }

  /** Every Web API call answered, in order. */
  get calls(): CallRecord[] {
    return this.rateLimits.calls;
  }

  /** Every stored message, ephemerals and deleted ones included. */
  get messages(): StoredMessage[] {
    return this.world.messages;
  }

  /** Files shared with files.completeUploadExternal, oldest first, with the bytes uploaded. */
  get uploads(): SharedFile[] {
    return this.world.uploads;
  }

  /** Open Socket Mode connections. */
  get connected(): number {
    return this.socketMode.connections;
  }

  /** The next `count` calls to `method` answer 429 with `Retry-After: retryAfterSeconds`. */
  failNext(method: string, count: number, retryAfterSeconds: number): void;
  /**
   * The next `count` calls (default 1) to `method` fail as `failure` says, without taking effect
   * (nothing is posted, edited or deleted): `{error: 'fatal_error'}` is Slack's HTTP 200
   * `{ok:false, error:'fatal_error'}`, `{status: 500, error: 'internal_error'}` a server error.
   */
  failNext(method: string, failure: ForcedFailure, count?: number): void;
  failNext(method: string, countOrFailure: number | ForcedFailure, retryAfterOrCount?: number): void {
    if (typeof countOrFailure === 'number') {
      this.rateLimits.failNext(method, countOrFailure, retryAfterOrCount ?? 1);
      return;
    }
    const queue = this.#failures.get(method) ?? [];
    for (let i = 0; i < (retryAfterOrCount ?? 1); i++) queue.push({ status: 200, ...countOrFailure });
    this.#failures.set(method, queue);
  }

  /** The current text of the visible messages in a channel (in one thread, when given), oldest first. */
  textIn(channel: string, thread?: string): string[] {
    return this.world
      .visible(channel)
      .filter((m) => thread === undefined || m.thread_ts === thread || m.ts === thread)
      .map((m) => m.text);
  }

  /** The app's own visible messages in a channel (one thread, when given), oldest first. */
  botMessages(channel: string, thread?: string): StoredMessage[] {
    return this.world
      .visible(channel)
      .filter((m) => m.user === this.botUserId && (thread === undefined || m.thread_ts === thread));
  }

  // --- Inbound: what users do ------------------------------------------------------------------

  /**
   * Sends an envelope over Socket Mode and resolves with the app's ack. Messages carried by
   * `message` / `app_mention` events are stored first, as they exist in Slack before the event
   * is sent, so conversations.replies sees them.
   */
  deliver(envelope: SocketEnvelope, options?: DeliverOptions): Promise<SocketAck> {
    if (envelope.type === 'events_api') this.seed(envelope.payload);
    return this.socketMode.deliver(envelope, options);
  }

  /**
   * Sends an Events API envelope over Socket Mode and redelivers it, as Slack does, while no ack
   * comes within `ackTimeoutMs` (up to 3 retries with retry_attempt / retry_reason "timeout").
   */
  deliverUntilAcked(
    envelope: SocketEnvelope,
    options?: Parameters<SocketModeServer['deliverUntilAcked']>[1],
  ): ReturnType<SocketModeServer['deliverUntilAcked']> {
    if (envelope.type === 'events_api') this.seed(envelope.payload);
    return this.socketMode.deliverUntilAcked(envelope, options);
  }

  /**
   * POSTs an Events API delivery as Slack does, retrying on a non-2xx response or none in time
   * (X-Slack-Retry-Num / X-Slack-Retry-Reason), up to 3 retries. Resolves with every attempt.
   */
  postWithRetries(
    url: string,
    delivery: HttpDelivery,
    options: HttpDeliveryOptions & RetryPolicy,
  ): Promise<DeliveryAttempt[]> {
    if ('json' in delivery) this.seed(delivery.json);
    return deliverWithRetries(url, delivery, options);
  }

  /**
   * A fresh response_url for a slash command or interaction (Slack gives each its own). What the
   * app posts there is recorded in `responses`.
   */
  responseUrl(): string {
    this.#responseUrls += 1;
    return `${this.url}/commands/${this.appId}/${this.#responseUrls}/hook`;
  }

  /**
   * The response_url of a click on the message `ts` in `channel` (block_actions carry one). Slack's
   * interactivity docs: a JSON post there with `replace_original: true` replaces that message,
   * `delete_original: true` deletes it (a post of a new message is only recorded here); a URL serves
   * five posts within 30 minutes. Posts are recorded in `responses` and count against no Web API
   * method's rate limit.
   */
  actionResponseUrl(channel: string, ts: string): string {
    this.#responseUrls += 1;
    const path = `/actions/${this.appId}/${this.#responseUrls}/hook`;
    this.#actionUrls.set(path, { channel, ts, uses: 0, issuedAt: Date.now() });
    return `${this.url}${path}`;
  }

  /** POSTs a delivery to an HTTP-mode app's Request URL, signed like Slack. */
  post(url: string, delivery: HttpDelivery, options: HttpDeliveryOptions): Promise<HttpDeliveryResult> {
    if ('json' in delivery) this.seed(delivery.json);
    return postToApp(url, delivery, options);
  }

  /**
   * Stores the message an Events API body (or a bare `message` / `app_mention` event) describes,
   * as it would exist in Slack, without delivering anything. deliver() and post() call it.
   */
  seed(body: unknown): void {
    if (body && typeof body === 'object' && !('event' in body) && 'channel' in body) body = { event: body };
    if (!body || typeof body !== 'object') return;
    const { event, team_id: team } = body as { event?: Record<string, unknown>; team_id?: string };
    if (!event || (event.type !== 'message' && event.type !== 'app_mention')) return;
    if (
      event.subtype !== undefined &&
      !['bot_message', 'thread_broadcast', 'file_share'].includes(String(event.subtype))
    )
      return;
    const channel = typeof event.channel === 'string' ? event.channel : undefined;
    const ts = typeof event.ts === 'string' ? event.ts : undefined;
    if (!channel || !ts) return;
    // An app_mention and its message event describe the same message; store it once, with the
    // files only the message event carries.
    const known = this.world.find(channel, ts);
    if (known) {
      if (Array.isArray(event.files) && !known.files) known.files = event.files as Array<Record<string, unknown>>;
      return;
    }
    this.world.add(
      {
        team: team ?? this.team,
        channel,
        ts,
        ...(typeof event.thread_ts === 'string' && event.thread_ts !== ts ? { thread_ts: event.thread_ts } : {}),
        user: typeof event.user === 'string' ? event.user : 'U0UNKNOWN1',
        ...(typeof event.bot_id === 'string' ? { bot_id: event.bot_id } : {}),
        text: typeof event.text === 'string' ? event.text : '',
        blocks: Array.isArray(event.blocks) ? event.blocks : [],
        ...(Array.isArray(event.files) ? { files: event.files as Array<Record<string, unknown>> } : {}),
      },
      'user',
    );
  }

  // --- Web API ----------------------------------------------------------------------------------

  async #onRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const answer = (status: number, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
      res.end(JSON.stringify(body));
    };
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    if (this.files.handle(req, res, path)) return;
    if (path.startsWith('/commands/') && req.method === 'POST') {
      // response_url: JSON {text, response_type, …}; Slack answers a bare "ok".
      const raw = await readBody(req);
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        res.writeHead(400, { 'content-type': 'text/plain' }).end('invalid_payload');
        return;
      }
      this.responses.push({ path, body });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    if (path.startsWith('/actions/') && req.method === 'POST') {
      const raw = await readBody(req);
      const text = (status: number, body: string) =>
        void res.writeHead(status, { 'content-type': 'text/plain' }).end(body);
      const hook = this.#actionUrls.get(path);
      if (!hook) return text(404, 'invalid_url');
      if (hook.uses >= 5) return text(404, 'used_url');
      if (Date.now() - hook.issuedAt > 30 * 60_000) return text(404, 'expired_url');
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        return text(400, 'invalid_payload');
      }
      hook.uses += 1;
      this.responses.push({ path, body });
      const original = this.world.find(hook.channel, hook.ts);
      if (body.delete_original === true) {
        if (original) original.deleted = true;
        return text(200, 'ok');
      }
      if (checkMessage(body.text, body.blocks)) return text(400, 'no_text');
      if (body.replace_original === true) {
        if (!original) return text(404, 'message_not_found');
        const blocks = Array.isArray(body.blocks) ? body.blocks : original.blocks;
        this.world.edit(
          original,
          { text: typeof body.text === 'string' ? body.text : original.text, blocks },
          'response_url',
        );
      }
      return text(200, 'ok');
    }
    if (path.startsWith('/upload/') && req.method === 'POST') return this.#onUpload(req, res, path);
    const method = /^\/api\/([A-Za-z.]+)$/.exec(path)?.[1];
    if (!method) return answer(404, { ok: false, error: 'not_found' });
    const raw = await readBody(req);
    const parsed = parseCall(req.headers, req.url ?? '/', raw);
    const now = Date.now();
    const record = (status: number, team: string | undefined, error?: string, cause?: CallRecord['cause']) =>
      this.rateLimits.record({
        method,
        team,
        at: now,
        status,
        ...(error ? { error } : {}),
        ...(cause ? { cause } : {}),
        ...('args' in parsed ? { args: parsed.args } : {}),
      });

    if ('error' in parsed) {
      record(200, undefined, parsed.error);
      return answer(200, { ok: false, error: parsed.error });
    }
    const workspace = this.workspaces.find((w) => w.botToken === parsed.token);
    const isAppToken = parsed.token === this.appToken;
    const authError = !parsed.token
      ? 'not_authed'
      : method === 'apps.connections.open'
        ? isAppToken
          ? undefined
          : workspace
            ? 'not_allowed_token_type'
            : 'invalid_auth'
        : workspace
          ? undefined
          : isAppToken
            ? 'not_allowed_token_type'
            : 'invalid_auth';
    if (authError) {
      record(200, workspace?.team, authError);
      return answer(200, { ok: false, error: authError });
    }

    const team = workspace?.team ?? this.team;
    const forced = this.#failures.get(method)?.shift();
    if (forced) {
      record(forced.status, team, forced.error, 'forced');
      return answer(forced.status, { ok: false, error: forced.error });
    }
    const limited = this.rateLimits.check(method, team, now);
    if (limited) {
      record(429, team, 'ratelimited', limited.cause);
      return answer(429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(limited.retryAfterSeconds) });
    }

    const handler = Object.hasOwn(METHODS, method) ? METHODS[method] : undefined;
    if (!handler) {
      record(200, team, 'unknown_method');
      return answer(200, { ok: false, error: 'unknown_method', req_method: method });
    }
    const context: CallContext = {
      world: this.world,
      workspace: workspace ?? this.#first,
      botUserId: this.botUserId,
      botId: this.botId,
      appId: this.appId,
      streaming: this.streaming,
      agent: this.agent,
      openConnection: () => this.socketMode.issueUrl(),
      uploadUrl: () => {
        const path = `/upload/v1/${randomBytes(12).toString('base64url')}`;
        return { url: `${this.url}${path}`, path };
      },
      scopes: this.scopes,
    };
    const result = handler(parsed.args, context);
    record(200, team, result.ok ? undefined : String(result.error));
    return answer(200, result.ok || result.error !== 'unknown_method' ? result : { ...result, req_method: method });
  }

  /**
   * An upload URL from files.getUploadURLExternal: it takes the file's bytes (raw or multipart) once,
   * and exactly the `length` declared for it. Slack answers `200 OK - <bytes>`; what it answers to a
   * wrong length is not documented, so the fake refuses it here (400) rather than let it through.
   */
  async #onUpload(req: http.IncomingMessage, res: http.ServerResponse, path: string): Promise<void> {
    const text = (status: number, body: string) =>
      void res.writeHead(status, { 'content-type': 'text/plain' }).end(body);
    const raw = await readBytes(req);
    const file = [...this.world.pendingFiles.values()].find((f) => f.uploadPath === path);
    if (!file || file.completed) return text(404, 'not_found');
    if (file.bytes) return text(400, 'already_uploaded');
    const bytes = await uploadedBytes(req.headers, raw);
    if (!bytes) return text(400, 'no_file_data');
    if (bytes.length !== file.length)
      return text(400, `length_mismatch: declared ${file.length} bytes, received ${bytes.length}`);
    file.bytes = bytes;
    return text(200, `OK - ${bytes.length}`);
  }

  async close(): Promise<void> {
    this.socketMode.close();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
