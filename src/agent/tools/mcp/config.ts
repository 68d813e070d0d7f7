import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * Per-tool approval override, by the tool's name on its server: "always" asks a person, "never"
 * runs at once. Without one, a tool's annotations decide (readOnlyHint: true → never).
 */
const ApprovalOverride = z.record(z.string().min(1), z.enum(['always', 'never'])).default({});

// Strict objects: a misspelt "approval" must be an error, not a silently ignored override.
const StdioServer = z.strictObject({
  type: z.literal('stdio').optional(),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  cwd: z.string().min(1).optional(),
  approval: ApprovalOverride,
});

const HttpServer = z.strictObject({
  type: z.enum(['http', 'streamable-http', 'streamableHttp']).optional(),
  url: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' }),
  headers: z.record(z.string(), z.string()).default({}),
  approval: ApprovalOverride,
});

export const McpServerConfig = z.union([StdioServer, HttpServer]);
export type McpServerConfig = z.infer<typeof McpServerConfig>;

export const SERVER_NAME = /^[A-Za-z0-9_-]{1,32}$/;

/** The common `mcpServers` file shape (Claude Desktop, Cursor, VS Code) plus per-tool approval overrides. */
export const McpConfig = z.strictObject({
  mcpServers: z.record(z.string(), McpServerConfig),
});
export type McpConfig = z.infer<typeof McpConfig>;

export class McpConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'McpConfigError';
  }
}

const ENV_REFERENCE = /\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Replaces `${VAR}` / `${env:VAR}` in headers and env values, so tokens can stay out of the file. */
function expandEnv(value: string, env: Record<string, string | undefined>, where: string): string {
  return value.replace(ENV_REFERENCE, (_, name: string) => {
    const found = env[name];
    if (found === undefined)
      throw new McpConfigError(`${where} refers to \${${name}}, which is not set in the environment`);
    return found;
  });
}

function describeEntryProblem(server: string, entry: unknown): string {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    return `MCP server "${server}": expected an object with "command" (stdio) or "url" (Streamable HTTP)`;
  }
  const hasCommand = 'command' in entry;
  const hasUrl = 'url' in entry;
  if (hasCommand === hasUrl) {
    return `MCP server "${server}": give either "command" (a program to run over stdio) or "url" (a Streamable HTTP endpoint)${hasCommand ? ', not both' : ''}`;
  }
  const parsed = (hasCommand ? StdioServer : HttpServer).safeParse(entry);
  if (parsed.success) return '';
  return parsed.error.issues
    .map((issue) => {
      const field = issue.path.map(String).join('.');
      const message =
        issue.code === 'unrecognized_keys'
          ? `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.map((k) => `"${k}"`).join(', ')}`
          : issue.message;
      return `MCP server "${server}": ${field ? `${field}: ` : ''}${message}`;
    })
    .join('; ');
}

/** Validates a parsed MCP config file, naming the server and field of every problem. */
export function parseMcpConfig(raw: unknown, env: Record<string, string | undefined> = process.env): McpConfig {
  if (typeof raw !== 'object' || raw === null || !('mcpServers' in raw)) {
    throw new McpConfigError(
      'expected a JSON object with an "mcpServers" object, e.g. {"mcpServers": {"github": {"command": "…"}}}',
    );
  }
  const servers = (raw as { mcpServers: unknown }).mcpServers;
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) {
    throw new McpConfigError('"mcpServers" must be an object of servers by name');
  }
  const problems: string[] = [];
  const extra = Object.keys(raw).filter((k) => k !== 'mcpServers');
  if (extra.length)
    problems.push(`unknown top-level field${extra.length === 1 ? '' : 's'} ${extra.map((k) => `"${k}"`).join(', ')}`);
  for (const [name, entry] of Object.entries(servers)) {
    if (!SERVER_NAME.test(name) || name.includes('__')) {
      problems.push(
        `MCP server "${name}": names are 1–32 characters of A–Z, a–z, 0–9, "_" and "-", without "__" (they prefix its tools as name__tool)`,
      );
      continue;
    }
    const problem = describeEntryProblem(name, entry);
    if (problem) problems.push(problem);
  }
  if (problems.length) throw new McpConfigError(problems.join('; '));
  const config = McpConfig.parse(raw);
  for (const [name, server] of Object.entries(config.mcpServers)) {
    const values = 'url' in server ? server.headers : server.env;
    for (const [key, value] of Object.entries(values)) {
      values[key] = expandEnv(value, env, `MCP server "${name}": ${'url' in server ? 'header' : 'env'} ${key}`);
    }
  }
  return config;
}

/** Reads MCP_CONFIG; every error names the file and says what to fix. */
export function loadMcpConfig(file: string, env: Record<string, string | undefined> = process.env): McpConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new McpConfigError(`MCP_CONFIG ${file} could not be read as JSON: ${(error as Error).message}`);
  }
  try {
    return parseMcpConfig(raw, env);
  } catch (error) {
    if (error instanceof McpConfigError) throw new McpConfigError(`MCP_CONFIG ${file} is not valid: ${error.message}`);
    throw error;
  }
}
