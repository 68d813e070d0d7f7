import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport, SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  ErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool as RemoteTool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { ToolOutput } from '../tool.ts';
import { credentialHeaders, transportOf, type McpServerConfig } from './config.ts';
import { GroupedStdioTransport } from './stdio-transport.ts';
import { SpanKind, traceCarrier, withSpan } from '../../../telemetry/spans.ts';
import type { ProgramSandbox } from '../../../sandbox/sandbox.ts';

export type { RemoteTool };

const MCP_LIMITS = {
  firstRetryMs: 500,
  maxRetryMs: 30_000,
  /** A call to a server that is down starts a reconnect at once if the last attempt is older than this. */
  eagerRetryAfterMs: 2_000,
  /** Per-call timeout unless the server's entry sets `timeout` (seconds). */
  callTimeoutMs: 120_000,
  /** Shutdown waits this long for a Streamable HTTP server to acknowledge the session DELETE. */
  terminateSessionMs: 2_000,
  stderrLineChars: 500,
} as const;

export type ConnectionState = 'connecting' | 'connected' | 'down' | 'closed';

export function unavailableMessage(server: string): string {
  return `The MCP server "${server}" is unavailable right now; try again later.`;
}

/** Text the model can use from a tool result's content blocks. */
function resultText(result: CallToolResult): string {
  const parts = result.content.map((block) => {
    switch (block.type) {
      case 'text':
        return block.text;
      case 'resource_link':
        return `[resource ${block.name}: ${block.uri}]`;
      case 'resource':
        return 'text' in block.resource
          ? block.resource.text
          : `[binary resource ${block.resource.uri} (${block.resource.mimeType ?? 'unknown type'})]`;
      default:
        return `[${block.type} content (${'mimeType' in block ? block.mimeType : 'unknown type'}) not shown]`;
    }
  });
  if (parts.length === 0 && result.structuredContent) return JSON.stringify(result.structuredContent);
  return parts.join('\n') || '(the tool returned no content)';
}

/** The connection is gone (closed, refused, reset, 5xx): whether a request got through is unknown. */
function isConnectionFailure(error: unknown): boolean {
  if (error instanceof McpError) return error.code === ErrorCode.ConnectionClosed;
  if (error instanceof StreamableHTTPError) return error.code === undefined || error.code >= 500 || error.code === 404;
  if (error instanceof SseError) return error.code === undefined || error.code >= 500 || error.code === 404;
  const text = `${(error as Error)?.message ?? ''} ${String((error as { cause?: unknown })?.cause ?? '')}`;
  return /fetch failed|ECONNREFUSED|ECONNRESET|EPIPE|socket hang up|not connected/i.test(text);
}

/**
 * One configured MCP server: a client that reconnects with exponential backoff when the server
 * drops, and remembers the server's last tool list while it is down (so the model's tool set and
 * the approval scope don't flap; a call meanwhile gets a clear "unavailable" error).
 */
export class McpConnection {
  readonly name: string;
  readonly #config: McpServerConfig;
  readonly #log: Logger;
  readonly #onTools: () => void;
  #client: Client | undefined;
  /** Kept for shutdown: a Streamable HTTP session is ended with a DELETE (spec: session management). */
  #transportInUse: Transport | undefined;
  #connecting: Promise<void> | undefined;
  #tools: RemoteTool[] = [];
  #state: ConnectionState = 'down';
  #retryMs: number = MCP_LIMITS.firstRetryMs;
  #lastAttempt = 0;
  #timer: NodeJS.Timeout | undefined;

  readonly #authProvider: OAuthClientProvider | undefined;
  readonly #sandbox: ProgramSandbox;

  /**
   * `sandbox`: where a stdio server starts (src/sandbox). `authProvider`: for a per-person server,
   * the person's OAuth connection (src/connections).
   */
  constructor(
    name: string,
    config: McpServerConfig,
    log: Logger,
    onTools: () => void,
    sandbox: ProgramSandbox,
    authProvider?: OAuthClientProvider,
  ) {
    this.name = name;
    this.#config = config;
    this.#sandbox = sandbox;
    this.#log = log.child({ mcpServer: name });
    this.#onTools = onTools;
    this.#authProvider = authProvider;
  }

  get state(): ConnectionState {
    return this.#state;
  }

  /** The last tool list the server sent (kept while it is down). */
  get tools(): RemoteTool[] {
    return this.#tools;
  }

  /** Connects once; a failure schedules a retry with backoff. Concurrent callers share the attempt. */
  connect(): Promise<void> {
    if (this.#state === 'closed' || this.#client) return Promise.resolve();
    this.#connecting ??= this.#attempt().finally(() => (this.#connecting = undefined));
    return this.#connecting;
  }

  #transport(): Transport {
    const config = this.#config;
    if ('command' in config) {
      // In a process group of its own, ended whole however Countersign exits (stdio-transport.ts).
      const transport = new GroupedStdioTransport({
        command: config.command,
        args: config.args,
        env: config.env,
        ...(config.cwd ? { cwd: config.cwd } : {}),
        confinement:
          config.sandbox === false
            ? { unconfinedEnv: { ...getDefaultEnvironment(), ...config.env } }
            : { sandbox: this.#sandbox, reach: config.sandbox },
      });
      // Piped and read, never inherited: a chatty server must not write into our logs' stream.
      transport.stderr.on('data', (chunk: Buffer) => {
        for (const line of chunk.toString('utf8').split('\n')) {
          if (line.trim()) this.#log.debug({ stderr: line.slice(0, MCP_LIMITS.stderrLineChars) }, 'MCP server stderr');
        }
      });
      return transport;
    }
    // A per-person connection sends the person's token and no credential header of the config's.
    const headers = this.#authProvider
      ? Object.fromEntries(Object.entries(config.headers).filter(([h]) => !credentialHeaders({ [h]: '' }).length))
      : config.headers;
    const options = {
      requestInit: { headers },
      ...(this.#authProvider ? { authProvider: this.#authProvider } : {}),
    };
    return transportOf(config) === 'sse'
      ? new SSEClientTransport(new URL(config.url), options)
      : new StreamableHTTPClientTransport(new URL(config.url), options);
  }

  get #callTimeoutMs(): number {
    return this.#config.timeout === undefined ? MCP_LIMITS.callTimeoutMs : this.#config.timeout * 1000;
  }

  async #attempt(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#lastAttempt = Date.now();
    this.#state = 'connecting';
    const client = new Client({ name: 'countersign', version: '0.1.0' });
    client.onerror = (error) => this.#log.debug({ err: error }, 'MCP transport error');
    const transport = this.#transport();
    try {
      await client.connect(transport);
      if (this.#closed()) {
        await client.close().catch(() => undefined);
        return;
      }
      client.onclose = () => this.#lost(client, 'the connection closed');
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => void this.#refresh(client));
      const tools = await this.#listTools(client);
      this.#client = client;
      this.#transportInUse = transport;
      this.#state = 'connected';
      this.#retryMs = MCP_LIMITS.firstRetryMs;
      this.#setTools(tools);
      this.#log.info({ tools: tools.length }, 'MCP server connected');
    } catch (error) {
      await client.close().catch(() => undefined);
      if (this.#closed()) return;
      this.#state = 'down';
      this.#log.warn({ err: error, retryInMs: this.#retryMs }, 'MCP server unavailable; will retry');
      this.#schedule();
    }
  }

  /** Read through a method: close() can change the state while an attempt awaits. */
  #closed(): boolean {
    return this.#state === 'closed';
  }

  async #listTools(client: Client): Promise<RemoteTool[]> {
    const tools: RemoteTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  async #refresh(client: Client): Promise<void> {
    try {
      if (client === this.#client) this.#setTools(await this.#listTools(client));
    } catch (error) {
      this.#log.warn({ err: error }, 'could not refresh the MCP tool list; keeping the previous one');
    }
  }

  #setTools(tools: RemoteTool[]): void {
    this.#tools = tools;
    this.#onTools();
  }

  #lost(client: Client, reason: string): void {
    if (client !== this.#client) return;
    this.#log.warn({ reason }, 'MCP server disconnected; keeping its last tool list and reconnecting');
    this.#client = undefined;
    this.#transportInUse = undefined;
    this.#state = 'down';
    client.onclose = undefined;
    void client.close().catch(() => undefined);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#state === 'closed' || this.#timer) return;
    const delay = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, MCP_LIMITS.maxRetryMs);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.connect();
    }, delay);
    this.#timer.unref();
  }

  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolOutput> {
    const client = this.#client;
    if (!client) {
      // Someone needs the server now: don't make them wait out a long backoff.
      if (this.#state === 'down' && Date.now() - this.#lastAttempt > MCP_LIMITS.eagerRetryAfterMs) void this.connect();
      return { content: unavailableMessage(this.name), isError: true };
    }
    try {
      const result = await withSpan(`tools/call ${tool}`, mcpCallSpan(this.name, tool), async () => {
        // The server joins the turn's trace (the MCP convention: W3C trace context in params._meta).
        const _meta: Record<string, unknown> = { ...traceCarrier() };
        return (await client.callTool(
          { name: tool, arguments: args, ...(_meta.traceparent ? { _meta } : {}) },
          undefined,
          {
            signal,
            timeout: this.#callTimeoutMs,
          },
        )) as CallToolResult;
      });
      return { content: resultText(result), isError: result.isError === true };
    } catch (error) {
      if (signal.aborted) throw error;
      if (isConnectionFailure(error)) {
        this.#lost(client, (error as Error).message);
        const delivered = error instanceof McpError;
        return {
          content: delivered
            ? `The connection to the MCP server "${this.name}" was lost during the call, so whether ${tool} took effect is unknown. The server is unavailable right now; try again later, and check the result before repeating a change.`
            : unavailableMessage(this.name),
          isError: true,
        };
      }
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        return {
          content: `The MCP server "${this.name}" did not answer ${tool} within ${this.#callTimeoutMs / 1000} s; its outcome is unknown.`,
          isError: true,
        };
      }
      return { content: `The MCP server "${this.name}" refused ${tool}: ${(error as Error).message}`, isError: true };
    }
  }

  async close(): Promise<void> {
    this.#state = 'closed';
    clearTimeout(this.#timer);
    const client = this.#client;
    const transport = this.#transportInUse;
    this.#client = undefined;
    this.#transportInUse = undefined;
    if (client) client.onclose = undefined;
    // Tell a Streamable HTTP server we are done, so it can free the session now rather than when
    // it times out. Best effort and bounded: a server that is gone must not hold up shutdown.
    if (client && transport instanceof StreamableHTTPClientTransport && transport.sessionId) {
      await Promise.race([
        transport
          .terminateSession()
          .catch((error: unknown) =>
            this.#log.debug({ err: error }, 'MCP session DELETE failed; the server will expire the session'),
          ),
        new Promise((resolve) => setTimeout(resolve, MCP_LIMITS.terminateSessionMs).unref()),
      ]);
    }
    await client?.close().catch(() => undefined);
    await this.#connecting;
  }
}

/** An MCP call's span (the MCP semantic conventions): which server, which tool. */
function mcpCallSpan(server: string, tool: string) {
  return {
    kind: SpanKind.CLIENT,
    attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': tool, 'countersign.mcp.server': server },
  };
}
