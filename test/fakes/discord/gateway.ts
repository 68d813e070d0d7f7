/**
 * The fake's gateway: a WebSocket endpoint speaking Discord's gateway protocol (API v10,
 * encoding=json, optional zlib-stream transport compression). It sends HELLO, accepts IDENTIFY and
 * RESUME, answers heartbeats, dispatches events with increasing sequence numbers, keeps every
 * session's events so a RESUME replays what the client missed, and lets tests break the
 * connection the ways Discord does (resumable close codes, op 7 RECONNECT, op 9 INVALID_SESSION).
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import zlib from 'node:zlib';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import type { ApiUser, Json } from '../../fixtures/discord/objects.ts';

export const GatewayOp = {
  Dispatch: 0,
  Heartbeat: 1,
  Identify: 2,
  PresenceUpdate: 3,
  Resume: 6,
  Reconnect: 7,
  RequestGuildMembers: 8,
  InvalidSession: 9,
  Hello: 10,
  HeartbeatAck: 11,
} as const;

export const GatewayIntent = {
  Guilds: 1 << 0,
  GuildMembers: 1 << 1,
  GuildPresences: 1 << 8,
  GuildMessages: 1 << 9,
  DirectMessages: 1 << 12,
  MessageContent: 1 << 15,
} as const;

/** Close codes the fake uses, from the gateway's close-code table. */
const GatewayClose = {
  UnknownError: 4000,
  DecodeError: 4002,
  NotAuthenticated: 4003,
  AuthenticationFailed: 4004,
  AlreadyAuthenticated: 4005,
  InvalidApiVersion: 4012,
  InvalidIntents: 4013,
  DisallowedIntents: 4014,
} as const;

export interface ReceivedFrame {
  connection: number;
  op: number;
  d: unknown;
  at: number;
}

export interface DispatchRecord {
  s: number;
  t: string;
  d: Json;
}

/** What the gateway needs to know about the world to greet a client. */
export interface GatewayWorld {
  token: string;
  bot: ApiUser;
  application: { id: string; flags: number };
  /** Full GUILD_CREATE payloads for every guild the bot is in. */
  guildCreates(): Json[];
}

export interface GatewayOptions {
  heartbeatIntervalMs: number;
  /** Intents this application may not use (privileged intents not enabled in the portal): IDENTIFY is closed with 4014. */
  disallowedIntents: number;
}

class Connection {
  readonly id: number;
  readonly socket: WebSocket;
  readonly query: URLSearchParams;
  sessionId: string | undefined;
  readonly #deflate: zlib.Deflate | undefined;
  readonly #pending: Buffer[] = [];

  constructor(id: number, socket: WebSocket, query: URLSearchParams) {
    this.id = id;
    this.socket = socket;
    this.query = query;
    if (query.get('compress') === 'zlib-stream') {
      // One zlib context for the whole connection; each payload ends in a Z_SYNC_FLUSH (00 00 ff ff).
      this.#deflate = zlib.createDeflate({ chunkSize: 65535 });
      this.#deflate.on('data', (chunk: Buffer) => this.#pending.push(chunk));
    }
  }

  get open(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  send(payload: Json): void {
    if (!this.open) return;
    const text = JSON.stringify(payload);
    if (!this.#deflate) {
      this.socket.send(text);
      return;
    }
    this.#deflate.write(text);
    this.#deflate.flush(zlib.constants.Z_SYNC_FLUSH, () => {
      const frame = Buffer.concat(this.#pending.splice(0));
      if (this.open) this.socket.send(frame, { binary: true });
    });
  }

  close(code: number, reason: string): void {
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING) {
      this.socket.close(code, reason);
    }
  }
}

export class GatewaySession {
  readonly id: string;
  readonly intents: number;
  readonly identify: Json;
  seq = 0;
  readonly log: DispatchRecord[] = [];
  connection: Connection | undefined;
  /** False between the socket closing and a RESUME; dispatches meanwhile are kept for replay. */
  get connected(): boolean {
    return !!this.connection?.open;
  }

  constructor(id: string, intents: number, identify: Json) {
    this.id = id;
    this.intents = intents;
    this.identify = identify;
  }
}

export class FakeGateway {
  readonly #world: GatewayWorld;
  readonly #options: GatewayOptions;
  readonly #wss = new WebSocketServer({ noServer: true });
  readonly #changes = new EventEmitter();
  readonly #connections = new Set<Connection>();
  #nextConnection = 1;
  /** The public ws:// base of this gateway, set when the server starts listening. */
  url = '';
  /** Every frame any client sent, in order. */
  readonly received: ReceivedFrame[] = [];
  readonly sessions: GatewaySession[] = [];

  constructor(world: GatewayWorld, options: GatewayOptions) {
    this.#world = world;
    this.#options = options;
    this.#changes.setMaxListeners(100);
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, req));
  }

  #accept(ws: WebSocket, req: IncomingMessage): void {
    const query = new URL(req.url ?? '/', 'ws://fake').searchParams;
    const conn = new Connection(this.#nextConnection++, ws, query);
    this.#connections.add(conn);
    ws.on('close', () => {
      this.#connections.delete(conn);
      this.#changed();
    });
    ws.on('error', () => undefined);
    if (query.get('v') !== '10') return conn.close(GatewayClose.InvalidApiVersion, 'Invalid API version.');
    if ((query.get('encoding') ?? 'json') !== 'json') {
      return conn.close(GatewayClose.DecodeError, 'The fake gateway speaks encoding=json only.');
    }
    ws.on('message', (data, isBinary) => this.#onFrame(conn, data, isBinary));
    conn.send({ op: GatewayOp.Hello, d: { heartbeat_interval: this.#options.heartbeatIntervalMs }, s: null, t: null });
  }

  #onFrame(conn: Connection, data: RawData, isBinary: boolean): void {
    let frame: { op?: unknown; d?: unknown };
    try {
      if (isBinary) throw new Error('binary');
      frame = JSON.parse(String(data)) as typeof frame;
    } catch {
      return conn.close(GatewayClose.DecodeError, 'Error while decoding payload.');
    }
    const op = typeof frame.op === 'number' ? frame.op : -1;
    this.received.push({ connection: conn.id, op, d: frame.d, at: Date.now() });
    switch (op) {
      case GatewayOp.Heartbeat:
        conn.send({ op: GatewayOp.HeartbeatAck, d: null, s: null, t: null });
        break;
      case GatewayOp.Identify:
        this.#identify(conn, (frame.d ?? {}) as Json);
        break;
      case GatewayOp.Resume:
        this.#resume(conn, (frame.d ?? {}) as Json);
        break;
      default:
        if (!conn.sessionId) conn.close(GatewayClose.NotAuthenticated, 'Not authenticated.');
    }
    this.#changed();
  }

  #tokenMatches(token: unknown): boolean {
    return typeof token === 'string' && token.replace(/^Bot /, '') === this.#world.token;
  }

  #identify(conn: Connection, d: Json): void {
    if (conn.sessionId) return conn.close(GatewayClose.AlreadyAuthenticated, 'Already authenticated.');
    if (!this.#tokenMatches(d.token)) return conn.close(GatewayClose.AuthenticationFailed, 'Authentication failed.');
    if (typeof d.intents !== 'number') return conn.close(GatewayClose.InvalidIntents, 'Invalid intent(s).');
    if (d.intents & this.#options.disallowedIntents)
      return conn.close(GatewayClose.DisallowedIntents, 'Disallowed intent(s).');
    const session = new GatewaySession(randomBytes(16).toString('hex'), d.intents, d);
    session.connection = conn;
    conn.sessionId = session.id;
    this.sessions.push(session);
    const guilds = this.#world.guildCreates();
    this.#send(session, 'READY', {
      v: 10,
      user_settings: {},
      user: { ...this.#world.bot, verified: true, mfa_enabled: false, email: null },
      guilds: guilds.map((g) => ({ id: g.id, unavailable: true })),
      relationships: [],
      private_channels: [],
      presences: [],
      session_id: session.id,
      session_type: 'normal',
      resume_gateway_url: `${this.url}/resume`,
      shard: Array.isArray(d.shard) ? d.shard : [0, 1],
      application: this.#world.application,
      geo_ordered_rtc_regions: [],
      auth: {},
    });
    for (const guild of guilds) this.#send(session, 'GUILD_CREATE', guild);
  }

  #resume(conn: Connection, d: Json): void {
    const session = this.sessions.find((s) => s.id === d.session_id);
    if (!session || !this.#tokenMatches(d.token) || typeof d.seq !== 'number' || d.seq > session.seq) {
      conn.send({ op: GatewayOp.InvalidSession, d: false, s: null, t: null });
      return;
    }
    session.connection?.close(GatewayClose.UnknownError, 'Session resumed elsewhere.');
    session.connection = conn;
    conn.sessionId = session.id;
    for (const missed of session.log.filter((e) => e.s > (d.seq as number))) {
      conn.send({ op: GatewayOp.Dispatch, ...missed });
    }
    this.#send(session, 'RESUMED', {});
  }

  #send(session: GatewaySession, t: string, d: Json): void {
    const record: DispatchRecord = { s: ++session.seq, t, d };
    session.log.push(record);
    session.connection?.send({ op: GatewayOp.Dispatch, ...record });
    this.#changed();
  }

  /**
   * Sends an event to every identified session, as Discord would: only if the session's intents
   * subscribe to it, with message content blanked when the MessageContent intent is missing.
   * While a session's socket is down the event is kept and replayed on RESUME.
   */
  dispatch(t: string, d: Json): void {
    if (!this.sessions.length) {
      throw new Error(
        `Cannot dispatch ${t}: no client has identified yet (await the client's clientReady event first)`,
      );
    }
    for (const session of this.sessions) {
      const visible = this.#asSeenBy(session, t, d);
      if (visible) this.#send(session, t, visible);
    }
  }

  #asSeenBy(session: GatewaySession, t: string, d: Json): Json | undefined {
    const has = (intent: number) => (session.intents & intent) === intent;
    if (t.startsWith('GUILD_') || t.startsWith('CHANNEL_') || t.startsWith('THREAD_')) {
      return has(GatewayIntent.Guilds) ? d : undefined;
    }
    if (t === 'MESSAGE_CREATE' || t === 'MESSAGE_UPDATE' || t === 'MESSAGE_DELETE') {
      const inGuild = typeof d.guild_id === 'string';
      if (!has(inGuild ? GatewayIntent.GuildMessages : GatewayIntent.DirectMessages)) return undefined;
      if (t === 'MESSAGE_DELETE' || has(GatewayIntent.MessageContent) || !inGuild) return d;
      // Without the privileged intent a bot still sees content of its own messages and of those mentioning it.
      const botId = this.#world.bot.id;
      const author = d.author as ApiUser | undefined;
      const mentions = (d.mentions as ApiUser[] | undefined) ?? [];
      if (author?.id === botId || mentions.some((m) => m.id === botId)) return d;
      return { ...d, content: '', embeds: [], attachments: [], components: [] };
    }
    return d;
  }

  /** Closes the live socket(s) with `code`; 4000 and most 4xxx codes let the client RESUME. */
  closeConnections(code: number = GatewayClose.UnknownError, reason = 'Closed by test'): void {
    for (const conn of this.#connections) conn.close(code, reason);
  }

  /** Sends op 7 RECONNECT: the client should reconnect and RESUME. */
  requestReconnect(): void {
    for (const conn of this.#connections) conn.send({ op: GatewayOp.Reconnect, d: null, s: null, t: null });
  }

  /** Sends op 9 INVALID_SESSION; `resumable: false` forces a fresh IDENTIFY. */
  invalidateSession(resumable: boolean): void {
    for (const conn of this.#connections) conn.send({ op: GatewayOp.InvalidSession, d: resumable, s: null, t: null });
  }

  /** How many frames with `op` clients have sent (IDENTIFY, RESUME, HEARTBEAT…). */
  countOp(op: number): number {
    return this.received.filter((f) => f.op === op).length;
  }

  /** Every event dispatched to sessions with type `t`. */
  dispatched(t: string): DispatchRecord[] {
    return this.sessions.flatMap((s) => s.log.filter((e) => e.t === t));
  }

  get openConnections(): number {
    return [...this.#connections].filter((c) => c.open).length;
  }

  /** Resolves with `check()`'s first defined value, re-checking on every gateway change. */
  until<T>(check: () => T | undefined, what: string, timeoutMs = 10_000): Promise<T> {
    return waitUntil(this.#changes, check, what, timeoutMs);
  }

  #changed(): void {
    this.#changes.emit('change');
  }

  async close(): Promise<void> {
    for (const conn of this.#connections) conn.close(1001, 'Fake Discord shutting down');
    for (const ws of this.#wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }
}

/** Waits until `check()` yields a value, re-evaluating whenever `changes` emits 'change'. */
export function waitUntil<T>(
  changes: EventEmitter,
  check: () => T | undefined,
  what: string,
  timeoutMs: number,
): Promise<T> {
  const now = check();
  if (now !== undefined) return Promise.resolve(now);
  return new Promise<T>((resolve, reject) => {
    const onChange = () => {
      const value = check();
      if (value === undefined) return;
      cleanup();
      resolve(value);
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`));
    }, timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      changes.off('change', onChange);
    };
    changes.on('change', onChange);
  });
}
