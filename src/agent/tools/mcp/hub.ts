import type { ProgramSandbox } from '../../../sandbox/sandbox.ts';
import { createHash } from 'node:crypto';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaType } from '@modelcontextprotocol/sdk/validation/types.js';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { unknownArgsProblem, type AnyTool, type RiskLevel, type ToolContext, type ToolOutput } from '../tool.ts';
import { transportOf, type McpConfig, type McpServerConfig } from './config.ts';
import { McpConnection, type ConnectionState, type RemoteTool } from './connection.ts';

/** What every model provider accepts as a tool name. */
export const MODEL_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const DESCRIPTION_CHARS = 1024;

function shortHash(value: unknown, length: number): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, length);
}

/**
 * The model-facing name of an MCP tool: `server__tool`. A name that breaks the providers' rule
 * (characters, 64 at most) is cleaned and given a hash of the original, so two tools never end up
 * with the same name. Server names may not contain "__", so the prefix is unambiguous.
 */
export function namespacedName(server: string, tool: string): string {
  const raw = `${server}__${tool}`;
  if (MODEL_TOOL_NAME.test(raw)) return raw;
  const clean = raw.replace(/[^A-Za-z0-9_-]/g, '_');
  return `${clean.slice(0, 64 - 9)}_${shortHash(raw, 8)}`;
}

/** Approval and risk from the tool's annotations, which the config can override per tool. */
function policyFor(
  remote: RemoteTool,
  override: 'always' | 'never' | undefined,
): { approval: 'always' | 'never'; risk: RiskLevel; idempotent: boolean } {
  const hints = remote.annotations ?? {};
  const readOnly = hints.readOnlyHint === true;
  return {
    // Annotations are hints from the server; anything short of a read-only claim asks a person.
    approval: override ?? (readOnly ? 'never' : 'always'),
    risk: hints.destructiveHint === true ? 'high' : readOnly ? 'low' : 'medium',
    idempotent: readOnly || hints.idempotentHint === true,
  };
}

/**
 * Whether the operator vouches for a server's annotations: a local (stdio) server they installed is
 * trusted unless the config says `"trusted": false`; a remote (URL) one only when it says `true`.
 */
function isTrusted(server: McpServerConfig | undefined): boolean {
  if (!server) return false;
  return server.trusted ?? transportOf(server) === 'stdio';
}

/** A person as their connections are keyed (src/connections). */
type ConnectionPerson = { platform: string; userId: string; workspace?: string };

/**
 * How per-person servers (`"auth": "oauth"`) authenticate: each person's own connection, kept by
 * src/connections (the agent does not import it; the wiring hands it in).
 */
export interface PersonalAuth {
  authProvider(person: ConnectionPerson, server: string): OAuthClientProvider;
  /** A provider that only reads a person's tokens (for listing tools through their connection). */
  readOnlyProvider(person: ConnectionPerson, server: string): OAuthClientProvider;
  isConnected(person: ConnectionPerson, server: string): Promise<boolean>;
  /** Someone connected to `server`, whose connection may list its tools. */
  anyoneConnected(server: string): Promise<ConnectionPerson | undefined>;
  /** A call ran with the person's connection, or was refused for want of one (audit). */
  used(person: ConnectionPerson, server: string, tool: string, outcome: 'used' | 'refused'): Promise<void>;
}

/**
 * The tool each per-person server offers before its own are known (and after): `<server>__connect`.
 * Without it, until someone has connected, the model sees nothing of the server and a person asking
 * for what it holds is never asked to connect. The call needs the requester's connection, so the
 * approval gate parks it and sends them the private Connect link (src/approval/connections.ts).
 */
export const CONNECT_TOOL = 'connect';

/** How long listing a per-person server's tools may hold up a turn. */
const DISCOVERY_TIMEOUT_MS = 5_000;

/**
 * The configured MCP servers and their tools, namespaced `server__tool`. Servers connect at
 * `start()` and reconnect by themselves; a server that is down keeps its last tool list, and calls
 * to it return an "unavailable" tool error.
 */
export class McpHub {
  readonly #connections: McpConnection[];
  readonly #config: McpConfig;
  readonly #listeners = new Set<() => void>();
  readonly #validators = new AjvJsonSchemaValidator();
  readonly #inputs = new Map<string, z.ZodType<Record<string, unknown>>>();
  readonly #log: Logger;
  readonly #personalAuth: PersonalAuth | undefined;
  readonly #sandbox: ProgramSandbox;
  /** Per-person servers' connections, one per person and server, made on a person's first call. */
  readonly #personal = new Map<string, McpConnection>();
  /** Per-person servers' tool lists, as someone's connection last listed them. */
  readonly #personalTools = new Map<string, RemoteTool[]>();

  /** `sandbox`: where stdio servers start (src/sandbox). */
  constructor(config: McpConfig, log: Logger, sandbox: ProgramSandbox, personalAuth?: PersonalAuth) {
    this.#config = config;
    this.#sandbox = sandbox;
    this.#log = log;
    this.#personalAuth = personalAuth;
    for (const warning of config.warnings) log.warn(warning);
    const servers = Object.entries(config.mcpServers);
    for (const [name] of servers.filter(([, server]) => server.disabled)) {
      log.info({ mcpServer: name }, `MCP server "${name}" is disabled in the config ("disabled": true); not started`);
    }
    // A per-person server is never connected with a shared credential: each person's calls use theirs.
    this.#connections = servers
      .filter(([, server]) => !server.disabled && !isPersonal(server))
      .map(([name, server]) => new McpConnection(name, server, log, () => this.#notify(), sandbox));
  }

  #notify(): void {
    this.#listeners.forEach((l) => l());
  }

  /** The per-person servers (`"auth": "oauth"`) that are not disabled. */
  personalServers(): string[] {
    return Object.entries(this.#config.mcpServers)
      .filter(([, server]) => !server.disabled && isPersonal(server))
      .map(([name]) => name);
  }

  /**
   * Lists the tools of per-person servers not known yet, through anyone's connection: a server's
   * tools are the same for everyone; whose account runs them is each caller's own. Cheap once every
   * server's tools are known (nothing to do); until then one lookup per unknown server.
   */
  async discoverPersonalTools(): Promise<void> {
    const auth = this.#personalAuth;
    if (!auth) return;
    for (const server of this.personalServers().filter((s) => !this.#personalTools.has(s))) {
      const person = await auth.anyoneConnected(server).catch(() => undefined);
      if (!person) continue;
      // A throw-away session with a provider that only reads their tokens: listing tools through
      // someone's connection never signs them in again or removes it; bounded, so no turn waits long.
      const connection = new McpConnection(
        server,
        this.#config.mcpServers[server]!,
        this.#log,
        () => undefined,
        this.#sandbox,
        auth.readOnlyProvider(person, server),
      );
      try {
        await Promise.race([connection.connect(), new Promise((r) => setTimeout(r, DISCOVERY_TIMEOUT_MS).unref())]);
        if (connection.tools.length) this.#setPersonalTools(server, connection.tools);
      } finally {
        await connection.close();
      }
    }
  }

  #setPersonalTools(server: string, tools: RemoteTool[]): void {
    this.#personalTools.set(server, tools);
    this.#notify();
  }

  #personalConnection(person: ConnectionPerson, server: string): McpConnection {
    const key = JSON.stringify([person.platform, person.userId, person.workspace ?? '', server]);
    let connection = this.#personal.get(key);
    if (!connection) {
      const config = this.#config.mcpServers[server]!;
      connection = new McpConnection(
        server,
        config,
        this.#log.child({ person: `${person.platform}:${person.userId}` }),
        () => {
          if (connection?.tools.length) this.#setPersonalTools(server, connection.tools);
        },
        this.#sandbox,
        this.#personalAuth!.authProvider(person, server),
      );
      this.#personal.set(key, connection);
    }
    return connection;
  }

  /** A per-person server's call: with the requester's own connection, or refused saying how to connect. */
  async #callAsPerson(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    person: ConnectionPerson,
    signal: AbortSignal,
  ): Promise<ToolOutput> {
    const auth = this.#personalAuth!;
    if (!(await auth.isConnected(person, server))) {
      await auth.used(person, server, tool, 'refused');
      return {
        content: `The person who asked has not connected their ${server} account, so ${tool} cannot run as them. Tell them to connect it with \`/countersign connect ${server}\` (only they see the link), then ask again.`,
        isError: true,
      };
    }
    const connection = this.#personalConnection(person, server);
    await connection.connect();
    const output = await connection.call(tool, args, signal);
    await auth.used(person, server, tool, 'used');
    return output;
  }

  /** Connects every server, waiting up to `timeoutMs` for slow ones (they keep trying in the background). */
  async start(timeoutMs = 10_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(this.#connections.map((c) => c.connect())),
      new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
  }

  /** Called whenever a server's tool list may have changed (connect, reconnect, list_changed). */
  onToolsChanged(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  state(server: string): ConnectionState | undefined {
    return this.#connections.find((c) => c.name === server)?.state;
  }

  isConnected(server: string): boolean {
    return this.state(server) === 'connected';
  }

  tools(): AnyTool[] {
    const shared = this.#connections.flatMap((connection) =>
      connection.tools.map((remote) =>
        this.#wrap(connection.name, remote, (args, ctx) => connection.call(remote.name, args, ctx.signal)),
      ),
    );
    const personal = [...this.#personalTools].flatMap(([server, remotes]) =>
      remotes.map((remote) => ({
        ...this.#wrap(server, remote, (args, ctx) =>
          this.#callAsPerson(server, remote.name, args, ctx.requester, ctx.signal),
        ),
        // The card says whose account the call runs as: the requester's, whoever approves it.
        describeForApproval: async (_args: unknown, ctx: ToolContext) =>
          `Runs as ${ctx.requester.displayName ?? `${ctx.requester.platform}:${ctx.requester.userId}`}'s own ${server} connection.`,
      })),
    );
    const taken = new Set(personal.map((tool) => tool.name));
    // A server's own `connect` tool keeps its name; the server is then reachable through it anyway.
    const connects = this.#personalAuth
      ? this.personalServers()
          .map((server) => this.#connectTool(server))
          .filter((tool) => !taken.has(tool.name))
      : [];
    return [...shared, ...personal, ...connects];
  }

  /**
   * `<server>__connect`: always offered (a tool appearing and disappearing would make its waiting
   * calls lapse as drift). Its facts are Countersign's own, not the server's, so they are trusted:
   * it reads nothing of the person's account, it only needs it connected. Run once the requester
   * is connected, it names the server's tools, listed through their connection.
   */
  #connectTool(server: string): AnyTool {
    const remote: RemoteTool = {
      name: CONNECT_TOOL,
      description: `Connects the requester's own ${server} account, so that ${server}'s tools run as them. Call it when the person asks for something ${server} holds and its other tools are not offered yet, or they are not connected: they are asked privately to connect, and once they have, this names ${server}'s tools.`,
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      annotations: { readOnlyHint: true, idempotentHint: true },
    };
    const tool = this.#wrap(server, remote, async (_args, ctx) => {
      const auth = this.#personalAuth!;
      if (!(await auth.isConnected(ctx.requester, server)))
        return this.#callAsPerson(server, CONNECT_TOOL, {}, ctx.requester, ctx.signal);
      await this.discoverPersonalTools();
      const names = (this.#personalTools.get(server) ?? []).map((t) => namespacedName(server, t.name));
      return {
        content: names.length
          ? `The person's ${server} account is connected. ${server}'s tools, offered from now on: ${names.join(', ')}.`
          : `The person's ${server} account is connected, but ${server}'s tools could not be listed yet; try again in a moment.`,
      };
    });
    return { ...tool, mcp: { ...tool.mcp!, trusted: true, readOnlyHint: true } };
  }

  #wrap(
    server: string,
    remote: RemoteTool,
    run: (args: Record<string, unknown>, ctx: ToolContext) => Promise<ToolOutput>,
  ): AnyTool {
    const override = this.#config.mcpServers[server]?.approval[remote.name];
    const policy = policyFor(remote, override);
    const schema = remote.inputSchema as Record<string, unknown>;
    // A changed schema or annotations is a different tool: approvals granted for the old one lapse.
    const version = shortHash([schema, remote.annotations ?? {}], 12);
    const name = namespacedName(server, remote.name);
    const description = `[MCP server ${server}] ${remote.description ?? remote.title ?? remote.name}`;
    return {
      name,
      description: description.slice(0, DESCRIPTION_CHARS),
      version,
      input: this.#input(`${name}@${version}`, schema),
      inputJsonSchema: schema,
      approval: policy.approval,
      risk: policy.risk,
      kind: 'mcp',
      mcp: {
        server: server,
        trusted: isTrusted(this.#config.mcpServers[server]),
        ...(remote.annotations?.readOnlyHint !== undefined ? { readOnlyHint: remote.annotations.readOnlyHint } : {}),
        ...(remote.annotations?.destructiveHint !== undefined
          ? { destructiveHint: remote.annotations.destructiveHint }
          : {}),
        ...(override ? { override } : {}),
        ...(this.#config.mcpServers[server] && isPersonal(this.#config.mcpServers[server]) ? { personal: true } : {}),
      },
      idempotent: policy.idempotent,
      execute: (args: Record<string, unknown>, ctx) => run(args, ctx),
    };
  }

  /**
   * Arguments are an object checked against the server's own JSON Schema, so the model hears about
   * a wrong argument before a person is asked to approve the call.
   */
  #input(key: string, schema: Record<string, unknown>): z.ZodType<Record<string, unknown>> {
    const cached = this.#inputs.get(key);
    if (cached) return cached;
    let validate: ((args: unknown) => { valid: boolean; errorMessage?: string | undefined }) | undefined;
    try {
      validate = this.#validators.getValidator(schema as JsonSchemaType);
    } catch (error) {
      this.#log.warn(
        { err: error, tool: key },
        'MCP tool input schema could not be compiled; arguments are passed unchecked',
      );
    }
    // What the schema does not declare is refused, whatever its additionalProperties says: a key the
    // policy could read (`path`, `dry_run`) must be one the tool declares.
    const declared = declaredKeys(schema);
    const defaults = topLevelDefaults(schema);
    const checked = z.record(z.string(), z.unknown()).superRefine((args, ctx) => {
      const unknown = declared ? Object.keys(args).filter((key) => !declared.has(key)) : [];
      if (unknown.length > 0) {
        ctx.addIssue({ code: 'custom', message: unknownArgsProblem(key.split('@')[0]!, unknown) });
        return;
      }
      const result = validate?.(args);
      if (result && !result.valid) {
        ctx.addIssue({
          code: 'custom',
          message: (result.errorMessage ?? 'does not match the schema').replace(/\bdata(?=[/ ])/g, 'arguments'),
        });
      }
    });
    // The server fills in an argument the call leaves out from its schema's `default`: filled in here,
    // the policy decides on (and the card shows) the value the server will use, not its absence.
    const input = defaults.size === 0 ? checked : checked.transform((args) => withDefaults(args, defaults));
    this.#inputs.set(key, input);
    return input;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#connections, ...this.#personal.values()].map((c) => c.close()));
  }
}

/** A server every person connects to with their own account. */
function isPersonal(server: McpServerConfig): boolean {
  return 'url' in server && server.auth === 'oauth';
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The argument names a tool's JSON Schema declares: its `properties`, and those of the branches of
 * a top-level `allOf` / `anyOf` / `oneOf`. Undefined when the schema keeps them elsewhere (a `$ref`):
 * then nothing can be refused by name, and the schema validator alone judges the arguments.
 */
/** The `default` of each top-level property the schema declares one for (policy `args:` read only the top level). */
function topLevelDefaults(schema: Record<string, unknown>): Map<string, unknown> {
  const defaults = new Map<string, unknown>();
  if (!isObject(schema.properties)) return defaults;
  for (const [key, property] of Object.entries(schema.properties))
    if (isObject(property) && Object.hasOwn(property, 'default')) defaults.set(key, property.default);
  return defaults;
}

/** `args` with each default the call left out, as a copy of its own (a default is never shared between calls). */
function withDefaults(args: Record<string, unknown>, defaults: ReadonlyMap<string, unknown>): Record<string, unknown> {
  const filled = { ...args };
  for (const [key, value] of defaults) if (!Object.hasOwn(filled, key)) filled[key] = structuredClone(value);
  return filled;
}

function declaredKeys(schema: Record<string, unknown>): Set<string> | undefined {
  if (typeof schema.$ref === 'string') return undefined;
  const keys = new Set<string>();
  const add = (s: unknown) => {
    if (isObject(s) && isObject(s.properties)) for (const key of Object.keys(s.properties)) keys.add(key);
  };
  add(schema);
  for (const combinator of ['allOf', 'anyOf', 'oneOf'] as const) {
    const branches = schema[combinator];
    if (Array.isArray(branches)) branches.forEach(add);
  }
  return keys;
}
