import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { opsServer } from './ops-tools.ts';

export interface FakeMcpSse {
  /** The event-stream endpoint a client is configured with (`"type": "sse"`). */
  url: string;
  /** Authorization headers seen, on the stream GET and on every message POST. */
  authorizations: string[];
  close(): Promise<void>;
}

/**
 * A real MCP server over the legacy HTTP+SSE transport (protocol 2024-11-05): GET /sse opens the
 * event stream and names a POST endpoint; messages go to POST /messages?sessionId=…
 */
export async function startFakeMcpSse(token: string): Promise<FakeMcpSse> {
  const authorizations: string[] = [];
  const transports = new Map<string, SSEServerTransport>();
  const server = http.createServer((req, res) => {
    authorizations.push(req.headers.authorization ?? '');
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401).end();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/sse') {
      const transport = new SSEServerTransport('/messages', res);
      transports.set(transport.sessionId, transport);
      res.on('close', () => transports.delete(transport.sessionId));
      void opsServer('sse').connect(transport);
      return;
    }
    if (req.method === 'POST' && url.pathname === '/messages') {
      const transport = transports.get(url.searchParams.get('sessionId') ?? '');
      if (!transport) {
        res.writeHead(404).end('unknown session');
        return;
      }
      void transport.handlePostMessage(req, res);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    authorizations,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
