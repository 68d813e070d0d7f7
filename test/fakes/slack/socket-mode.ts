/**
 * Socket Mode as Slack speaks it: apps.connections.open hands out a one-time `ws://…/link/?ticket=`
 * URL; on connect the server sends `{"type":"hello", …}`; it then pushes envelopes
 * (`events_api`, `slash_commands`, `interactive`) that the client acks by sending back
 * `{"envelope_id", "payload"?}`. A `{"type":"disconnect"}` message asks the client to reconnect
 * through a fresh apps.connections.open, which is how Slack rotates connections.
 */
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

type EnvelopeType = 'events_api' | 'slash_commands' | 'interactive';

export interface SocketEnvelope {
  type: EnvelopeType;
  payload: unknown;
  /** Generated when absent. */
  envelope_id?: string;
  /** Slack sets it for slash commands and interactivity, whose ack may carry a response. */
  accepts_response_payload?: boolean;
  retry_attempt?: number;
  retry_reason?: string;
}

export interface SocketAck {
  envelope_id: string;
  /** What the app acked with (a slash command's response, say); absent on a bare ack. */
  payload?: unknown;
  at: number;
}

export interface DeliverOptions {
  /** Rejects when no ack arrives in this long (Slack's own deadline is 3 s; tests default to 10 s). */
  timeoutMs?: number;
}

/** Reasons Slack gives in a `disconnect` message. */
export type DisconnectReason = 'warning' | 'refresh_requested' | 'link_disabled';

export class SocketModeServer {
  readonly #wss = new WebSocketServer({ noServer: true });
  readonly #tickets = new Set<string>();
  readonly #sockets = new Set<WebSocket>();
  readonly #waiting = new Map<string, (ack: SocketAck) => void>();
  readonly #pingTimer: NodeJS.Timeout | undefined;
  readonly #appId: string;
  /** Every ack received, in order. */
  readonly acks: SocketAck[] = [];
  /** Every envelope sent, in order. */
  readonly sent: Array<Required<Pick<SocketEnvelope, 'type' | 'envelope_id'>> & SocketEnvelope> = [];
  /** Connections accepted so far (a reconnect adds one). */
  connectionsOpened = 0;
  #baseUrl = '';

  constructor(options: { appId: string; pingIntervalMs: number }) {
    this.#appId = options.appId;
    if (options.pingIntervalMs > 0) {
      // Slack pings its clients; @slack/socket-mode reconnects when pings stop after having started.
      this.#pingTimer = setInterval(() => {
        for (const ws of this.#sockets) ws.ping(`ping ${Date.now()}`);
      }, options.pingIntervalMs);
      this.#pingTimer.unref();
    }
  }

  setBaseUrl(httpUrl: string): void {
    this.#baseUrl = httpUrl.replace(/^http/, 'ws');
  }

  /** A one-time WebSocket URL for apps.connections.open. */
  issueUrl(): string {
    const ticket = randomUUID();
    this.#tickets.add(ticket);
    return `${this.#baseUrl}/link/?ticket=${ticket}&app_id=${this.#appId}`;
  }

  get connections(): number {
    return this.#sockets.size;
  }

  handleUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const ticket = url.searchParams.get('ticket') ?? '';
    if (url.pathname !== '/link/' || !this.#tickets.delete(ticket)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n');
      return;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws));
  }

  #accept(ws: WebSocket): void {
    this.#sockets.add(ws);
    this.connectionsOpened += 1;
    ws.on('close', () => this.#sockets.delete(ws));
    ws.on('message', (data) => {
      let message: { envelope_id?: unknown; payload?: unknown };
      try {
        message = JSON.parse(String(data)) as typeof message;
      } catch {
        return;
      }
      if (typeof message.envelope_id !== 'string') return;
      const ack: SocketAck = {
        envelope_id: message.envelope_id,
        ...(message.payload !== undefined ? { payload: message.payload } : {}),
        at: Date.now(),
      };
      this.acks.push(ack);
      this.#waiting.get(ack.envelope_id)?.(ack);
    });
    ws.send(
      JSON.stringify({
        type: 'hello',
        num_connections: this.#sockets.size,
        debug_info: { host: 'applink-fake-1', build_number: 1, approximate_connection_time: 18060 },
        connection_info: { app_id: this.#appId },
      }),
    );
  }

  /** Resolves once at least `count` clients are connected. */
  async waitForConnections(count = 1, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.#sockets.size < count) {
      if (Date.now() > deadline)
        throw new Error(`no Socket Mode connection within ${timeoutMs} ms (have ${this.#sockets.size})`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /**
   * Sends an envelope on the newest connection (Slack picks any one of an app's connections) and
   * resolves with the client's ack; rejects when none arrives in time.
   */
  deliver(envelope: SocketEnvelope, options: DeliverOptions = {}): Promise<SocketAck> {
    const socket = [...this.#sockets].at(-1);
    if (!socket) return Promise.reject(new Error('cannot deliver: no Socket Mode connection is open'));
    const full = {
      envelope_id: envelope.envelope_id ?? randomUUID(),
      type: envelope.type,
      payload: envelope.payload,
      accepts_response_payload: envelope.accepts_response_payload ?? envelope.type !== 'events_api',
      ...(envelope.retry_attempt !== undefined ? { retry_attempt: envelope.retry_attempt } : { retry_attempt: 0 }),
      ...(envelope.retry_reason !== undefined ? { retry_reason: envelope.retry_reason } : { retry_reason: '' }),
    };
    const timeoutMs = options.timeoutMs ?? 10_000;
    return new Promise<SocketAck>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(full.envelope_id);
        reject(new Error(`no ack for ${full.type} envelope ${full.envelope_id} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiting.set(full.envelope_id, (ack) => {
        clearTimeout(timer);
        this.#waiting.delete(full.envelope_id);
        resolve(ack);
      });
      this.sent.push(full);
      socket.send(JSON.stringify(full));
    });
  }

  /**
   * Delivers an envelope as Slack delivers Events API envelopes: one not acked within `ackTimeoutMs`
   * (Slack: 3 s) is sent again as a new envelope with `retry_attempt` 1, 2, 3 and `retry_reason`
   * "timeout", until one is acked or the retries run out. Resolves with the ack (undefined if none
   * came) and every envelope id sent.
   */
  async deliverUntilAcked(
    envelope: SocketEnvelope,
    options: {
      ackTimeoutMs?: number;
      delaysMs?: number[];
      beforeRetry?: (retryNum: number) => Promise<void> | void;
    } = {},
  ): Promise<{ ack: SocketAck | undefined; envelopeIds: string[] }> {
    const delays = options.delaysMs ?? [100, 100, 100];
    const envelopeIds: string[] = [];
    for (let attempt = 0; attempt <= delays.length; attempt++) {
      if (attempt > 0) {
        await new Promise((r) => setTimeout(r, delays[attempt - 1]));
        await options.beforeRetry?.(attempt);
      }
      const envelopeId = randomUUID();
      envelopeIds.push(envelopeId);
      try {
        const ack = await this.deliver(
          {
            ...envelope,
            envelope_id: envelopeId,
            ...(attempt > 0 ? { retry_attempt: attempt, retry_reason: 'timeout' } : {}),
          },
          { timeoutMs: options.ackTimeoutMs ?? 3000 },
        );
        return { ack, envelopeIds };
      } catch {
        // Not acked in time: Slack sends it again.
      }
    }
    return { ack: undefined, envelopeIds };
  }

  /** Asks every client to reconnect, as Slack does before rotating a connection. */
  requestReconnect(reason: DisconnectReason = 'refresh_requested'): void {
    for (const ws of this.#sockets) {
      ws.send(JSON.stringify({ type: 'disconnect', reason, debug_info: { host: 'applink-fake-1' } }));
    }
  }

  /** Drops every connection without a disconnect message (a network failure). */
  dropConnections(): void {
    for (const ws of this.#sockets) ws.terminate();
  }

  close(): void {
    clearInterval(this.#pingTimer);
    for (const ws of this.#sockets) ws.terminate();
    this.#wss.close();
  }
}
