import { readFileSync } from 'node:fs';
import { z } from 'zod';

const Override = z.record(z.string(), z.enum(['always', 'never'])).default({});

const StdioServer = z.object({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  cwd: z.string().optional(),
  /** Per-tool approval override: "always" asks a person, "never" runs at once. */
  approval: Override,
});

const HttpServer = z.object({
  url: z.url(),
  headers: z.record(z.string(), z.string()).default({}),
  approval: Override,
});

export const McpServerConfig = z.union([StdioServer, HttpServer]);
export type McpServerConfig = z.infer<typeof McpServerConfig>;

/** The common `mcpServers` file shape (Claude Desktop, Cursor, …) plus per-tool approval overrides. */
export const McpConfig = z.object({
  mcpServers: z.record(
    z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'server names are 1-32 of A-Z a-z 0-9 _ -'),
    McpServerConfig,
  ),
});
export type McpConfig = z.infer<typeof McpConfig>;

export function loadMcpConfig(file: string): McpConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`MCP_CONFIG ${file} could not be read as JSON: ${(error as Error).message}`, { cause: error });
  }
  const parsed = McpConfig.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`).join('; ');
    throw new Error(`MCP_CONFIG ${file} is not valid: ${problems}`);
  }
  return parsed.data;
}
