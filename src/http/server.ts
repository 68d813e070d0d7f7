import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';

export type RouteHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void | Promise<void>;

export interface HttpServer {
  readonly port: number;
  /** Routes by exact path, or by prefix when the path ends in `*`. */
  route(path: string, handler: RouteHandler): void;
  /**
   * Marks this process not ready until the returned function is called (a platform still
   * connecting): /healthz answers 503 meanwhile.
   */
  holdReadiness(what: string): () => void;
  /** What still holds readiness. */
  notReady(): string[];
  close(): Promise<void>;
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** The process's one HTTP listener: health, metrics, and Slack's HTTP-mode events. */
export async function startHttpServer(port: number, host: string, log: Logger): Promise<HttpServer> {
  const exact = new Map<string, RouteHandler>();
  const prefixes: Array<[string, RouteHandler]> = [];
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const handler = exact.get(path) ?? prefixes.find(([p]) => path.startsWith(p))?.[1];
    if (!handler) return sendJson(res, 404, { error: 'not found' });
    Promise.resolve(handler(req, res)).catch((error: unknown) => {
      log.error({ err: error, path }, 'HTTP handler failed');
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
      else res.end();
    });
  });
  server.keepAliveTimeout = 65_000; // longer than common load balancers' idle timeout
  const holds = new Map<symbol, string>();
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new Error(`HTTP_PORT ${port} is already in use on ${host}; set HTTP_PORT to a free port (0 picks one)`)
          : error,
      ),
    );
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    route(path, handler) {
      if (path.endsWith('*')) prefixes.push([path.slice(0, -1), handler]);
      else exact.set(path, handler);
    },
    holdReadiness(what) {
      const key = Symbol(what);
      holds.set(key, what);
      return () => void holds.delete(key);
    },
    notReady: () => [...holds.values()],
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
