import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

/**
 * The tools both fake MCP servers offer: read-only, destructive, unannotated, one whose name needs
 * cleaning for the model, and a few that make the server misbehave on purpose.
 */
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
  server.registerTool(
    'logs.tail',
    {
      description: 'Last log lines',
      inputSchema: { lines: z.number().int().max(100) },
      annotations: { readOnlyHint: true },
    },
    async ({ lines }) => ({ content: [{ type: 'text', text: `${label}: ${lines} lines` }] }),
  );
  server.registerTool('fail', { description: 'Always fails', inputSchema: {} }, async () => ({
    content: [{ type: 'text', text: 'the database is read-only' }],
    isError: true,
  }));
  server.registerTool('crash', { description: 'Answers, then exits the server process', inputSchema: {} }, async () => {
    setTimeout(() => process.exit(1), 10);
    return { content: [{ type: 'text', text: 'bye' }] };
  });
  server.registerTool('crash_now', { description: 'Exits without answering', inputSchema: {} }, async () => {
    process.exit(1);
  });
  server.registerTool(
    'hang',
    { description: 'Never answers; gives up only when the client cancels the call', inputSchema: {} },
    async (_args, extra) =>
      new Promise((resolve) =>
        extra.signal.addEventListener('abort', () => resolve({ content: [{ type: 'text', text: 'cancelled' }] })),
      ),
  );
  server.registerTool(
    'add_tool',
    { description: 'Adds a tool at run time', inputSchema: { name: z.string() } },
    async ({ name }) => {
      server.registerTool(name, { description: 'Added at run time', inputSchema: {} }, async () => ({
        content: [{ type: 'text', text: `${label}: ${name} works` }],
      }));
      return { content: [{ type: 'text', text: `added ${name}` }] };
    },
  );
  return server;
}
