import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

/** The tools both fake MCP servers offer: read-only, destructive, and unannotated. */
export function opsServer(label: string): McpServer {
  const server = new McpServer({ name: `fake-${label}`, version: '1.0.0' });
  server.registerTool(
    'get_status',
    {
      description: 'Status of a service',
      inputSchema: { service: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ service }) => ({ content: [{ type: 'text', text: `${label}: ${service} is healthy` }] }),
  );
  server.registerTool(
    'restart',
    {
      description: 'Restarts a service',
      inputSchema: { service: z.string() },
      annotations: { readOnlyHint: false, destructiveHint: true },
    },
    async ({ service }) => ({ content: [{ type: 'text', text: `${label}: restarted ${service}` }] }),
  );
  server.registerTool(
    'note',
    { description: 'Leaves a note', inputSchema: { text: z.string() } },
    async ({ text }) => ({
      content: [{ type: 'text', text: `${label}: noted ${text}` }],
    }),
  );
  server.registerTool('crash', { description: 'Exits the server process', inputSchema: {} }, async () => {
    setTimeout(() => process.exit(1), 10);
    return { content: [{ type: 'text', text: 'bye' }] };
  });
  return server;
}
