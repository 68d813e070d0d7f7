import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { opsServer } from './ops-tools.ts';

export interface FakeMcpHttp {
  url: string;
  port: number;
  authorizations: string[];
  /** Session ids the server issued (sessions mode only). */
  sessions: string[];
  /** Session ids a client ended with DELETE, in order (sessions mode only). */
  deletedSessions: string[];
  /** The `params` of every `tools/call` request, as sent (`_meta` holds a caller's trace context). */
  toolCalls: Array<{ name?: string; _meta?: Record<string, unknown> }>;
  close(): Promise<void>;
}

export interface FakeMcpHttpOptions {
  port?: number;
  /**
   * Stateful: issue an Mcp-Session-Id at initialize and route later requests by it, as most real
   * servers do. Off, every request gets a fresh stateless server.
   */
  sessions?: boolean;
}

/** A real MCP server over Streamable HTTP, requiring a bearer token. */
export async function startFakeMcpHttp(
  token: string,
  portOrOptions: number | FakeMcpHttpOptions = 0,
): Promise<FakeMcpHttp> {
  const options = typeof portOrOptions === 'number' ? { port: portOrOptions } : portOrOptions;
  const authorizations: string[] = [];
  const sessions: string[] = [];
  const deletedSessions: string[] = [];
  const toolCalls: FakeMcpHttp['toolCalls'] = [];
  const live = new Map<string, StreamableHTTPServerTransport>();

  const stateful = async (req: http.IncomingMessage, res: http.ServerResponse, body: unknown) => {
    const id = req.headers['mcp-session-id'];
    const sessionId = typeof id === 'string' ? id : undefined;
    if (req.method === 'DELETE' && sessionId) deletedSessions.push(sessionId);
    let transport = sessionId ? live.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId) {
        res.writeHead(404).end(); // unknown session: the client must initialize again
        return;
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (issued) => {
          sessions.push(issued);
          live.set(issued, created);
        },
      });
      created.onclose = () => {
        if (created.sessionId) live.delete(created.sessionId);
      };
      await opsServer('http').connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  };

  const stateless = async (req: http.IncomingMessage, res: http.ServerResponse, body: unknown) => {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const mcp = opsServer('http');
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, body);
  };

  const server = http.createServer((req, res) => {
    authorizations.push(req.headers.authorization ?? '');
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401).end();
      return;
    }
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      const body: unknown = raw ? JSON.parse(raw) : undefined;
      const message = body as { method?: string; params?: FakeMcpHttp['toolCalls'][number] } | undefined;
      if (message?.method === 'tools/call' && message.params) toolCalls.push(message.params);
      void (options.sessions ? stateful : stateless)(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const actual = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actual}/mcp`,
    port: actual,
    authorizations,
    sessions,
    deletedSessions,
    toolCalls,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
