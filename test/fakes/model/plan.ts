import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a fake model server should answer to one request, independent of the wire format. */
export type FakeResponse =
  | {
      kind: 'stream';
      /** Text pieces, each one delta event. */
      text?: string[];
      /** Tool calls; `json` pieces are sent as separate argument deltas. */
      toolCalls?: Array<{ id: string; name: string; json: string[] }>;
      stop?: 'end_turn' | 'tool_use' | 'max_tokens';
      usage?: { input: number; output: number; cacheRead?: number; cacheWrite?: number };
      /** Close the connection after this many SSE events (a dropped stream). */
      cutAfterEvents?: number;
      delayMs?: number;
    }
  | { kind: 'error'; status: number; body: unknown; headers?: Record<string, string> }
  /** Replay a recorded stream verbatim (a fixture file's content). */
  | { kind: 'raw'; contentType: string; body: string };

export interface RecordedRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface FakeModelServer {
  url: string;
  requests: RecordedRequest[];
  /** Answers for the next requests, in order; after them the responder (if any) answers. */
  queue: FakeResponse[];
  /** Every SSE event written, with the time it was written (latency benchmarks). */
  emitted: Array<{ at: number; event: string }>;
  close(): Promise<void>;
}

type Emit = (event: string | undefined, data: unknown) => void;

/**
 * A tiny HTTP server for fake model APIs: it records each request, then answers with the next
 * queued response or the responder's, rendered in the API's SSE format by `render`.
 */
export async function startFakeModelServer(options: {
  path: RegExp;
  render: (response: Extract<FakeResponse, { kind: 'stream' }>, emit: Emit) => void;
  errorBody: (status: number, body: unknown) => unknown;
  responder?: (body: Record<string, unknown>) => FakeResponse;
  /** How the API frames SSE: Anthropic names events, OpenAI sends bare data lines and [DONE]. */
  done?: string;
}): Promise<FakeModelServer> {
  const requests: RecordedRequest[] = [];
  const queue: FakeResponse[] = [];
  const emitted: Array<{ at: number; event: string }> = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => void handle(req, res, raw));
  });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string) {
    if (req.method !== 'POST' || !options.path.test(req.url ?? '')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: { message: 'not found' } }));
    }
    const body = JSON.parse(raw || '{}') as Record<string, unknown>;
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    const response = queue.shift() ?? options.responder?.(body);
    if (!response) {
      res.writeHead(500, { 'content-type': 'application/json' });
      return res.end(JSON.stringify(options.errorBody(500, 'no scripted response')));
    }
    if (response.kind === 'error') {
      res.writeHead(response.status, { 'content-type': 'application/json', ...response.headers });
      return res.end(JSON.stringify(options.errorBody(response.status, response.body)));
    }
    if (response.kind === 'raw') {
      res.writeHead(200, { 'content-type': response.contentType });
      return res.end(response.body);
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'request-id': `req_${requests.length}`,
    });
    const events: string[] = [];
    options.render(response, (event, data) =>
      events.push(
        `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`,
      ),
    );
    if (options.done) events.push(`data: ${options.done}\n\n`);
    for (const [i, event] of events.entries()) {
      if (response.cutAfterEvents !== undefined && i >= response.cutAfterEvents) {
        // Let what was written reach the client first, as when a connection drops mid-stream.
        await sleep(50);
        res.socket?.destroy();
        return;
      }
      if (response.delayMs) await sleep(response.delayMs);
      res.write(event);
      emitted.push({ at: Date.now(), event });
    }
    res.end();
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    queue,
    emitted,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Splits a string into `n` roughly equal pieces (tool JSON sent across many deltas). */
export function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length ? out : [''];
}
