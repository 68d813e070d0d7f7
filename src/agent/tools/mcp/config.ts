import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { headerValueProblem } from '../../../core/env-fields.ts';

/**
 * Per-tool approval override, by the tool's name on its server: "always" asks a person, "never"
 * runs at once. Without one, a tool's annotations decide (readOnlyHint: true → never).
 */
const ApprovalOverride = z.record(z.string().min(1), z.enum(['always', 'never'])).default({});

const MCP_CONFIG_LIMITS = {
  /**
   * `timeout` is in seconds, as Cline and Roo Code write it (their default is 60, their upper bound
   * 3600). Gemini CLI writes milliseconds; a value above this bound is refused with that hint
   * rather than guessed at, since 60000 could mean a minute or seventeen hours.
   */
  maxTimeoutSeconds: 3600,
} as const;

const Timeout = z
  .number({ error: 'expected a number of seconds, e.g. "timeout": 60' })
  .positive({ error: 'expected a positive number of seconds' })
  .max(MCP_CONFIG_LIMITS.maxTimeoutSeconds, {
    error: (issue) =>
      `${String(issue.input)} is more than ${MCP_CONFIG_LIMITS.maxTimeoutSeconds}; Countersign reads "timeout" in seconds, as Cline does — if it came from a client that writes milliseconds, divide it by 1000`,
  })
  .optional();

/**
 * Fields other clients use to run tools without asking (Cline's `autoApprove`, Roo Code's
 * `alwaysAllow`). Countersign never lets a pasted config skip a person's approval: they are read,
 * reported at start-up and ignored. Per-tool `approval` is the explicit way to opt a tool out.
 */
const APPROVAL_BYPASS_FIELDS = ['autoApprove', 'alwaysAllow'] as const;
const ApprovalBypass = z.array(z.string(), { error: 'expected a list of tool names' }).optional();

/** Fields every server entry may carry whatever its transport. */
const common = {
  /** Claude Desktop, Cline, Cursor: a disabled server is kept in the file but not started. */
  disabled: z.boolean({ error: 'expected true or false' }).default(false),
  timeout: Timeout,
  approval: ApprovalOverride,
  /**
   * Whether the policy believes the server's tool annotations (a `readOnlyHint` that skips the
   * card). Default: true for a local stdio server the operator installed, false for a URL.
   */
  trusted: z.boolean({ error: 'expected true or false' }).optional(),
  autoApprove: ApprovalBypass,
  alwaysAllow: ApprovalBypass,
};

const AbsolutePaths = z.array(z.string().startsWith('/', 'expected absolute paths')).default([]);

/**
 * Where a stdio server runs (docs/sandbox.md): in the sandbox by default, seeing the system folders
 * and nothing else of the host; `read` and `write` name more paths, `network` lets it out. `false`
 * runs it as the bot itself (a start-up warning says so).
 */
const ServerSandbox = z
  .union([
    z.boolean({ error: 'expected true, false or {"network", "read", "write"}' }),
    z.strictObject({ network: z.boolean().default(false), read: AbsolutePaths, write: AbsolutePaths }),
  ])
  .default(true)
  .transform((value) => (value === false ? false : value === true ? { network: false, read: [], write: [] } : value));
export type ServerSandbox = z.infer<typeof ServerSandbox>;

// Strict objects: a misspelt "approval" must be an error, not a silently ignored override.
const StdioServer = z.strictObject({
  type: z.literal('stdio').optional(),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  cwd: z.string().min(1).optional(),
  sandbox: ServerSandbox,
  ...common,
});

const HTTP_TYPES = ['http', 'streamable-http', 'streamableHttp', 'sse'] as const;

const HttpServer = z.strictObject({
  /** Absent or any Streamable HTTP spelling: Streamable HTTP; "sse": the legacy HTTP+SSE transport. */
  type: z.enum(HTTP_TYPES).optional(),
  url: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' }),
  headers: z.record(z.string(), z.string()).default({}),
  /**
   * "oauth": a per-person server (docs/connections.md) — every call runs with the requester's own
   * OAuth connection, never a shared credential.
   */
  auth: z.literal('oauth', { error: 'expected "oauth" (per-person connections) or no auth' }).optional(),
  /** A client registered with the server ahead of time (GitHub style); else dynamic registration. */
  clientId: z.string().min(1).optional(),
  clientSecret: z.string().min(1).optional(),
  /** The OAuth scope to ask for. */
  scope: z.string().min(1).optional(),
  ...common,
});

export const McpServerConfig = z.union([StdioServer, HttpServer]);
export type McpServerConfig = z.infer<typeof McpServerConfig>;

/** The transport a server entry asks for. */
export function transportOf(server: McpServerConfig): 'stdio' | 'sse' | 'streamable-http' {
  if ('command' in server) return 'stdio';
  return server.type === 'sse' ? 'sse' : 'streamable-http';
}

const SERVER_NAME = /^[A-Za-z0-9_-]{1,32}$/;

/** The parsed file: every server by name (disabled ones included, for the hub to skip and log). */
export interface McpConfig {
  mcpServers: Record<string, McpServerConfig>;
  /** Things in the file Countersign read but does not do (approval bypasses); logged at start. */
  warnings: string[];
}

class McpConfigError extends Error {
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

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Older Cline versions wrote the transport as `transportType`; it means exactly `type`, so it is
 * read as one (both at once must agree).
 */
function normaliseEntry(entry: Record<string, unknown>): Record<string, unknown> {
  if (!('transportType' in entry)) return entry;
  const { transportType, ...rest } = entry;
  if ('type' in rest && rest.type !== transportType) return entry; // let the strict schema name the conflict
  return { ...rest, type: transportType };
}

function describeEntryProblem(server: string, entry: Record<string, unknown>): string {
  const hasCommand = 'command' in entry;
  const hasUrl = 'url' in entry;
  if (hasCommand === hasUrl) {
    return `MCP server "${server}": give either "command" (a program to run over stdio) or "url" (a Streamable HTTP or SSE endpoint)${hasCommand ? ', not both' : ''}`;
  }
  if (hasCommand && entry.type !== undefined && entry.type !== 'stdio') {
    return `MCP server "${server}": type: "${String(entry.type)}" needs a "url"; a server started with "command" uses type "stdio"`;
  }
  if (hasUrl && entry.type === 'stdio') {
    return `MCP server "${server}": type: "stdio" needs a "command"; a server at a "url" uses type "http" (Streamable HTTP) or "sse"`;
  }
  const parsed = (hasCommand ? StdioServer : HttpServer).safeParse(entry);
  if (parsed.success) return '';
  return parsed.error.issues
    .map((issue) => {
      const field = issue.path.map(String).join('.');
      const message =
        issue.code === 'unrecognized_keys'
          ? `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.map((k) => `"${k}"`).join(', ')}`
          : field === 'type'
            ? `expected one of ${hasCommand ? '"stdio"' : HTTP_TYPES.map((t) => `"${t}"`).join(', ')}`
            : issue.message;
      return `MCP server "${server}": ${field ? `${field}: ` : ''}${message}`;
    })
    .join('; ');
}

/** Top-level keys accepted: `mcpServers` (Claude Desktop, Cursor, Cline) or `servers` (VS Code's mcp.json). */
const SERVER_KEYS = ['mcpServers', 'servers'] as const;

/**
 * Validates a parsed MCP config file, naming the server and field of every problem. Fields other
 * clients write are honoured where their meaning is clear (`disabled`, `timeout`, `type`,
 * `transportType`) and approval bypasses are ignored with a warning; any other field is an error.
 */
export function parseMcpConfig(raw: unknown, env: Record<string, string | undefined> = process.env): McpConfig {
  const key = isObject(raw) ? SERVER_KEYS.find((k) => k in raw) : undefined;
  if (!isObject(raw) || key === undefined) {
    throw new McpConfigError(
      'expected a JSON object with an "mcpServers" object (or VS Code\'s "servers"), e.g. {"mcpServers": {"github": {"command": "…"}}}',
    );
  }
  const servers = raw[key];
  if (!isObject(servers)) throw new McpConfigError(`"${key}" must be an object of servers by name`);
  const problems: string[] = [];
  if (SERVER_KEYS.every((k) => k in raw)) {
    problems.push('both "mcpServers" and "servers" are given; keep one');
  }
  // VS Code's mcp.json may carry `inputs` (values it prompts for); an empty list means nothing.
  const extra = Object.keys(raw).filter(
    (k) => !SERVER_KEYS.includes(k as (typeof SERVER_KEYS)[number]) && !(k === 'inputs' && isEmptyList(raw.inputs)),
  );
  if (extra.includes('inputs')) {
    problems.push(
      '"inputs" asks VS Code to prompt for values, which a bot cannot do; reference environment variables as ${env:NAME} instead',
    );
  }
  const unknown = extra.filter((k) => k !== 'inputs');
  if (unknown.length)
    problems.push(
      `unknown top-level field${unknown.length === 1 ? '' : 's'} ${unknown.map((k) => `"${k}"`).join(', ')}`,
    );

  const parsed: Record<string, McpServerConfig> = {};
  for (const [name, rawEntry] of Object.entries(servers)) {
    if (!SERVER_NAME.test(name) || name.includes('__')) {
      problems.push(
        `MCP server "${name}": names are 1–32 characters of A–Z, a–z, 0–9, "_" and "-", without "__" (they prefix its tools as name__tool)`,
      );
      continue;
    }
    if (!isObject(rawEntry)) {
      problems.push(
        `MCP server "${name}": expected an object with "command" (stdio) or "url" (Streamable HTTP or SSE)`,
      );
      continue;
    }
    const entry = normaliseEntry(rawEntry);
    const problem = describeEntryProblem(name, entry);
    if (problem) problems.push(problem);
    else parsed[name] = McpServerConfig.parse(entry);
  }
  if (problems.length) throw new McpConfigError(problems.join('; '));

  const warnings: string[] = [];
  for (const [name, server] of Object.entries(parsed)) {
    for (const field of APPROVAL_BYPASS_FIELDS) {
      const tools = server[field];
      if (!tools?.length) continue;
      warnings.push(
        `MCP server "${name}": "${field}" (${tools.join(', ')}) is ignored — Countersign does not let a pasted config skip approvals; to run a tool without asking, say so per tool: "approval": {${tools.map((t) => `"${t}": "never"`).join(', ')}}`,
      );
    }
    if (server.disabled) continue; // its ${VAR}s need not be set: it will not start
    if ('command' in server && server.sandbox === false)
      warnings.push(
        `MCP server "${name}": "sandbox": false runs it as Countersign itself — it can read the bot's environment through /proc (database, platform tokens, keys), its files and the network (docs/sandbox.md)`,
      );
    const values = 'url' in server ? server.headers : server.env;
    for (const [k, value] of Object.entries(values)) {
      values[k] = expandEnv(value, env, `MCP server "${name}": ${'url' in server ? 'header' : 'env'} ${k}`);
    }
    if ('url' in server) problems.push(...headerProblems(name, server.headers));
    if ('url' in server && server.clientSecret)
      server.clientSecret = expandEnv(server.clientSecret, env, `MCP server "${name}": clientSecret`);
    if ('url' in server && server.auth === 'oauth' && transportOf(server) === 'sse')
      problems.push(`MCP server "${name}": "auth": "oauth" needs Streamable HTTP, not "type": "sse"`);
    // A credential header would be sent instead of each person's own token: everyone would act as it.
    const credential = 'url' in server && server.auth === 'oauth' ? credentialHeaders(server.headers) : [];
    if (credential.length)
      problems.push(
        `MCP server "${name}": "auth": "oauth" runs each call with the requester's own token; remove the ${credential.join(', ')} header${credential.length > 1 ? 's' : ''}`,
      );
  }
  if (problems.length) throw new McpConfigError(problems.join('; '));
  return { mcpServers: parsed, warnings };
}

/** Headers that carry a credential of their own (any letter case). */
export function credentialHeaders(headers: Record<string, string>): string[] {
  return Object.keys(headers).filter((h) => /^(authorization|cookie|proxy-authorization)$/i.test(h));
}

/**
 * Header values (after `${VAR}`s are filled in) an HTTP request cannot carry: a pasted
 * `"Authorization": "Bearer …"` would otherwise fail every connection attempt with "Cannot convert
 * argument to a ByteString", naming neither the server nor the header.
 */
function headerProblems(server: string, headers: Record<string, string>): string[] {
  return Object.entries(headers).flatMap(([header, value]) => {
    const problem = headerValueProblem(value);
    return problem ? [`MCP server "${server}": header ${header} ${problem}`] : [];
  });
}

const isEmptyList = (value: unknown) => Array.isArray(value) && value.length === 0;

/** Reads MCP_CONFIG; every error names the file and says what to fix. */
export function loadMcpConfig(file: string, env: Record<string, string | undefined> = process.env): McpConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new McpConfigError(`MCP_CONFIG ${file} could not be read as JSON: ${(error as Error).message}`);
  }
  try {
    const config = parseMcpConfig(raw, env);
    return { ...config, warnings: config.warnings.map((w) => `MCP_CONFIG ${file}: ${w}`) };
  } catch (error) {
    if (error instanceof McpConfigError) throw new McpConfigError(`MCP_CONFIG ${file} is not valid: ${error.message}`);
    throw error;
  }
}
