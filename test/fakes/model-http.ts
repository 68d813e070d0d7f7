import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Message } from '../../src/agent/messages.ts';
import { planRound, type ParsedScript } from '../../src/agent/providers/scripted.ts';

/**
 * The HTTP plumbing shared by the fake Anthropic and OpenAI servers (test/fakes/anthropic-server.ts,
 * test/fakes/openai-server.ts): a real node:http server on 127.0.0.1 that records each request and
 * answers with the next scripted response, rendered by a wire-format "dialect".
 */

/** One scripted answer, independent of the wire format. */
export type FakeResponse = FakeStream | FakeHttpError | FakeRaw;

export interface FakeStream {
  kind: 'stream';
  /** Text pieces, one delta event each, in order. */
  text?: string[];
  /**
   * Tool calls; each `json` piece is sent as a separate argument delta. An OpenAI-compatible server
   * may leave `id` out (some do); the Anthropic API always sends one.
   */
  toolCalls?: Array<{ id?: string; name: string; json: string[] }>;
  /** Default: 'tool_use' when there are tool calls, else 'end_turn'. */
  stop?: 'end_turn' | 'tool_use' | 'max_tokens';
  usage?: { input: number; output: number; cacheRead?: number; cacheWrite?: number };
  /** Pause before each event, in milliseconds. */
  delayMs?: number;
  /** Destroy the socket after this many events: a connection dropped mid-stream. */
  cutAfterEvents?: number;
  /** Send the API's in-stream error event after this many events, then end the stream. */
  errorAfterEvents?: { after: number; type: 'overloaded' | 'rate_limit' | 'server'; message?: string };
}

interface FakeHttpError {
  kind: 'error';
  status: number;
  /** A string becomes the message of the API's error shape; an object is sent verbatim. */
  body?: unknown;
  /** e.g. `retry-after`, `retry-after-ms`. */
  headers?: Record<string, string>;
}

/** A recorded stream replayed byte for byte (test/fixtures/model-streams/*.sse). */
interface FakeRaw {
  kind: 'raw';
  body: string;
  contentType?: string;
}

interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** One server-sent event: Anthropic names its events, OpenAI sends bare `data:` lines. */
export interface SseFrame {
  event?: string;
  data: string;
}

export type ErrorKind = 'overloaded' | 'rate_limit' | 'server' | 'invalid_request';

/** What makes a fake speak one API. */
export interface Dialect {
  /** Paths (after any base URL prefix) this API answers. */
  path: RegExp;
  requestIdHeader: string;
  /** The API's error body for an HTTP error. */
  errorBody(status: number, body: unknown, requestId: string): unknown;
  /** The SSE frames of a successful stream, in order (the request decides optional parts such as usage). */
  render(stream: FakeStream, request: Record<string, unknown>): SseFrame[];
  /** The API's answer to a model id it does not serve (unknown or retired). */
  modelNotFound(model: string, requestId: string): { status: number; body: unknown };
  /** The frame the API sends when a stream fails after it started. */
  streamError(kind: ErrorKind, message: string): SseFrame;
  /** What the real API would reject in this request body (400), or undefined if it is valid. */
  validate?(body: Record<string, unknown>): string | undefined;
}

export interface FakeModelOptions {
  /** Answers requests once the queue is empty (e.g. a script deciding from the conversation). */
  responder?: (body: Record<string, unknown>) => FakeResponse;
  /** Reject requests the real API would reject (default true). */
  strict?: boolean;
  /**
   * The model ids this API serves; a request for any other gets the API's "model not found" answer
   * (unless a queued answer is waiting: queued answers come first). Default: any model.
   */
  models?: string[];
}

/** A started fake: where it listens, what it received, what it will answer. */
export interface StartedFakeModel {
  url: string;
  requests: RecordedRequest[];
  /** Answers for the next requests, in order; after them the responder (if any) answers. */
  queue: FakeResponse[];
  enqueue(...responses: FakeResponse[]): void;
  /** Every SSE frame written, with when (latency benchmarks). */
  emitted: Array<{ at: number; event: string }>;
  close(): Promise<void>;
}

/** A fake that has not started yet; `start()` listens on 127.0.0.1 on a free port. */
export interface FakeModelApi {
  requests: RecordedRequest[];
  queue: FakeResponse[];
  enqueue(...responses: FakeResponse[]): void;
  start(): Promise<{ url: string; close(): Promise<void> }>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function frameText(frame: SseFrame): string {
  return `${frame.event ? `event: ${frame.event}\n` : ''}data: ${frame.data}\n\n`;
}

export function createFakeModelServer(dialect: Dialect, options: FakeModelOptions = {}) {
  const requests: RecordedRequest[] = [];
  const queue: FakeResponse[] = [];
  const emitted: Array<{ at: number; event: string }> = [];
  const enqueue = (...responses: FakeResponse[]) => void queue.push(...responses);

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): Promise<void> {
    const requestId = `req_fake_${requests.length + 1}`;
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', [dialect.requestIdHeader]: requestId, ...headers });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || !dialect.path.test(new URL(req.url ?? '/', 'http://x').pathname)) {
      return json(404, dialect.errorBody(404, `no route for ${req.method} ${req.url}`, requestId));
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw || '{}') as Record<string, unknown>;
    } catch {
      return json(400, dialect.errorBody(400, 'the request body is not valid JSON', requestId));
    }
    requests.push({ method: req.method, path: req.url ?? '', headers: req.headers, body });
    const invalid = options.strict === false ? undefined : dialect.validate?.(body);
    if (invalid) return json(400, dialect.errorBody(400, invalid, requestId));
    const queued = queue.shift();
    if (!queued && options.models && !options.models.includes(String(body.model))) {
      const { status, body: error } = dialect.modelNotFound(String(body.model), requestId);
      return json(status, error);
    }
    const response = queued ?? options.responder?.(body);
    if (!response) return json(500, dialect.errorBody(500, 'the fake has no scripted response left', requestId));
    if (response.kind === 'error') {
      return json(response.status, dialect.errorBody(response.status, response.body, requestId), response.headers);
    }
    if (response.kind === 'raw') {
      res.writeHead(200, {
        'content-type': response.contentType ?? 'text/event-stream',
        [dialect.requestIdHeader]: requestId,
      });
      res.end(response.body);
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      [dialect.requestIdHeader]: requestId,
    });
    const frames = dialect.render(response, body);
    const failure = response.errorAfterEvents;
    if (failure) {
      frames.splice(
        failure.after,
        frames.length,
        dialect.streamError(failure.type, failure.message ?? `fake ${failure.type} error`),
      );
    }
    for (const [i, frame] of frames.entries()) {
      if (response.cutAfterEvents !== undefined && i >= response.cutAfterEvents) {
        // Let what was written reach the client first, as when a connection drops mid-stream.
        await sleep(20);
        res.socket?.destroy();
        return;
      }
      if (response.delayMs) await sleep(response.delayMs);
      // The client went away (an aborted round): stop writing, as a real server would.
      if (res.destroyed || res.writableEnded) return;
      const text = frameText(frame);
      res.write(text);
      emitted.push({ at: Date.now(), event: text });
    }
    res.end();
  }

  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      handle(req, res, raw).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500).end(String(error));
        else res.destroy();
      });
    });
  });

  async function start(): Promise<{ url: string; close(): Promise<void> }> {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return {
      url,
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    };
  }

  const api: FakeModelApi = { requests, queue, enqueue, start };
  return { api, emitted };
}

/** Starts a fake and hands back one object with everything a test needs. */
export async function startFake(dialect: Dialect, options: FakeModelOptions = {}): Promise<StartedFakeModel> {
  const { api, emitted } = createFakeModelServer(dialect, options);
  const { url, close } = await api.start();
  return { url, close, requests: api.requests, queue: api.queue, enqueue: api.enqueue, emitted };
}

/** Splits text into pieces of `size` characters (text or tool JSON sent across many deltas). */
export function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length ? out : [''];
}

/** The stream a scripted round would produce, split the way a model streams it. */
export function responseFromScript(script: ParsedScript, messages: Message[]): FakeResponse {
  const round = planRound(script, messages);
  if (round.error) return { kind: 'error', status: 500, body: round.error };
  return {
    kind: 'stream',
    text: round.text ? pieces(round.text, round.chunkSize) : [],
    toolCalls: round.toolCalls.map((c) => ({ id: c.id, name: c.name, json: pieces(c.json, 7) })),
    delayMs: round.delayMs,
  };
}
