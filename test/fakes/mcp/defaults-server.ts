import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

/**
 * A real MCP server over stdio whose tool declares defaults in its input schema: the server, not the
 * caller, fills in an argument the call leaves out (as many real servers' `dry_run`, `replicas` do).
 */
const server = new McpServer({ name: 'fake-defaults', version: '1.0.0' });
server.registerTool(
  'scale',
  {
    description: 'Scales a deployment',
    inputSchema: {
      deployment: z.string(),
      replicas: z.number().int().default(0),
      namespace: z.string().default('prod'),
    },
  },
  async ({ deployment, replicas, namespace }) => ({
    content: [{ type: 'text', text: `scaled ${deployment} in ${namespace} to ${replicas}` }],
  }),
);
await server.connect(new StdioServerTransport());
