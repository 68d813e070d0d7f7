import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { opsServer } from './ops-tools.ts';

/** A real MCP server over stdio (run as a child process by the MCP client under test). */
await opsServer('stdio').connect(new StdioServerTransport());
