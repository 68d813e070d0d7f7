import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

/**
 * A real MCP server over stdio whose one tool answers with what Postgres's jsonb refuses: a NUL and
 * a lone surrogate (both arrive intact through JSON-RPC, as `\u0000` and `\ud800`).
 */
const server = new McpServer({ name: 'fake-raw-bytes', version: '1.0.0' });
server.registerTool(
  'dump',
  { description: 'Dumps a record as stored', inputSchema: {}, annotations: { readOnlyHint: true } },
  async () => ({ content: [{ type: 'text', text: 'rec\u0000ord \ud800 end' }] }),
);
await server.connect(new StdioServerTransport());
