import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { AnyTool, ToolOutput } from '../tool.ts';
import type { McpConfig, McpServerConfig } from './config.ts';

interface RemoteTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
}

/** The model-facing name of an MCP tool: `server__tool`, limited to what every provider accepts. */
export function namespacedName(server: string, tool: string): string {
  return `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}

const CALL_TIMEOUT_MS = 120_000;

/** One configured MCP server: a client that reconnects with backoff and remembers its last tool list. */
class McpConnection {
  readonly name: string;
  readonly #config: McpServerConfig;
  readonly #log: Logger;
  readonly #onTools: () => void;
  #client: Client | undefined;
  #tools: RemoteTool[] = [];
  #retryMs = 500;
  #closed = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(name: string, config: McpServerConfig, log: Logger, onTools: () => void) {
    this.name = name;
    this.#config = config;
    this.#log = log.child({ mcpServer: name });
    this.#onTools = onTools;
  }

  get connected(): boolean {
    return this.#client !== undefined;
  }

  get tools(): RemoteTool[] {
    return this.#tools;
  }

  async connect(): Promise<void> {
    if (this.#closed || this.#client) return;
    const client = new Client({ name: 'countersign', version: '0.1.0' });
    const transport =
      'command' in this.#config
        ? new StdioClientTransport({
            command: this.#config.command,
            args: this.#config.args,
            env: { PATH: process.env.PATH ?? '', ...this.#config.env },
            ...(this.#config.cwd ? { cwd: this.#config.cwd } : {}),
            stderr: 'ignore',
          })
        : new StreamableHTTPClientTransport(new URL(this.#config.url), {
            requestInit: { headers: this.#config.headers },
          });
    client.onclose = () => this.#lost('the connection closed');
    client.onerror = (error) => this.#log.debug({ err: error }, 'MCP transport error');
    try {
      await client.connect(transport);
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => void this.#refresh(client));
      this.#client = client;
      await this.#refresh(client);
      this.#retryMs = 500;
      this.#log.info({ tools: this.#tools.length }, 'MCP server connected');
    } catch (error) {
      this.#log.warn({ err: error }, 'MCP server unavailable; retrying');
      await client.close().catch(() => undefined);
      this.#client = undefined;
      this.#schedule();
    }
  }

  async #refresh(client: Client): Promise<void> {
    const tools: RemoteTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      tools.push(...(page.tools as RemoteTool[]));
      cursor = page.nextCursor;
    } while (cursor);
    this.#tools = tools;
    this.#onTools();
  }

  #lost(reason: string): void {
    if (!this.#client) return;
    this.#log.warn({ reason }, 'MCP server disconnected; keeping its last tool list');
    const client = this.#client;
    this.#client = undefined;
    void client.close().catch(() => undefined);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#closed || this.#timer) return;
    const delay = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, 30_000);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.connect();
    }, delay);
    this.#timer.unref();
  }

  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolOutput> {
    const client = this.#client;
    if (!client)
      return { content: `The ${this.name} tool server is unavailable right now; try again later.`, isError: true };
    try {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        signal,
        timeout: CALL_TIMEOUT_MS,
      });
      const parts = (result.content as Array<{ type: string; text?: string; uri?: string; mimeType?: string }>) ?? [];
      const content = parts
        .map((p) =>
          p.type === 'text'
            ? (p.text ?? '')
            : p.type === 'resource_link'
              ? `[resource ${p.uri}]`
              : `[${p.type} ${p.mimeType ?? ''}]`,
        )
        .join('\n');
      return { content: content || '(no content)', isError: Boolean(result.isError) };
    } catch (error) {
      if (signal.aborted) throw error;
      const message = (error as Error).message ?? String(error);
      if (/closed|ECONNREFUSED|ECONNRESET|fetch failed|not connected/i.test(message)) {
        this.#lost(message);
        return { content: `The ${this.name} tool server is unavailable right now; try again later.`, isError: true };
      }
      return { content: `${this.name} tool ${tool} failed: ${message}`, isError: true };
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    await client?.close().catch(() => undefined);
  }
}

/**
 * The configured MCP servers and their tools, namespaced by server. Approval follows the tool's
 * annotations (readOnlyHint: true runs at once, anything else asks) unless the config overrides it.
 */
export class McpHub {
  readonly #connections: McpConnection[];
  readonly #config: McpConfig;
  readonly #listeners = new Set<() => void>();

  constructor(config: McpConfig, log: Logger) {
    this.#config = config;
    this.#connections = Object.entries(config.mcpServers).map(
      ([name, server]) => new McpConnection(name, server, log, () => this.#listeners.forEach((l) => l())),
    );
  }

  /** Connects every server (waiting up to `timeoutMs` for slow ones; they keep trying in the background). */
  async start(timeoutMs = 10_000): Promise<void> {
    await Promise.race([
      Promise.allSettled(this.#connections.map((c) => c.connect())),
      new Promise((r) => setTimeout(r, timeoutMs).unref()),
    ]);
  }

  /** Called when a server's tool list changes (connect, reconnect, list_changed). */
  onToolsChanged(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  isConnected(server: string): boolean {
    return this.#connections.find((c) => c.name === server)?.connected ?? false;
  }

  tools(): AnyTool[] {
    return this.#connections.flatMap((connection) => connection.tools.map((remote) => this.#wrap(connection, remote)));
  }

  #wrap(connection: McpConnection, remote: RemoteTool): AnyTool {
    const override = this.#config.mcpServers[connection.name]?.approval[remote.name];
    const readOnly = remote.annotations?.readOnlyHint === true;
    const approval = override ? override : readOnly ? 'never' : 'always';
    return {
      name: namespacedName(connection.name, remote.name),
      description: `[${connection.name}] ${remote.description ?? remote.name}`.slice(0, 1024),
      version: createHash('sha256')
        .update(JSON.stringify([remote.inputSchema, remote.annotations ?? {}]))
        .digest('hex')
        .slice(0, 12),
      input: z.record(z.string(), z.unknown()),
      inputJsonSchema: remote.inputSchema,
      approval,
      risk: remote.annotations?.destructiveHint ? 'high' : readOnly ? 'low' : 'medium',
      idempotent: readOnly || remote.annotations?.idempotentHint === true,
      execute: (args: Record<string, unknown>, ctx) => connection.call(remote.name, args, ctx.signal),
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.#connections.map((c) => c.close()));
  }
}
