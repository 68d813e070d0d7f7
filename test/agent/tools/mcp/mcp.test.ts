import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMcpConfig, parseMcpConfig } from '../../../../src/agent/tools/mcp/config.ts';
import { unavailableMessage } from '../../../../src/agent/tools/mcp/connection.ts';
import { McpHub, MODEL_TOOL_NAME, namespacedName } from '../../../../src/agent/tools/mcp/hub.ts';
import { needsApproval, riskOf, toolSpec, type AnyTool, type ToolOutput } from '../../../../src/agent/tools/tool.ts';
import { createLogger } from '../../../../src/log.ts';
import { pino } from 'pino';
import { startFakeMcpHttp, type FakeMcpHttp } from '../../../fakes/mcp/http-server.ts';
import { startFakeMcpSse } from '../../../fakes/mcp/sse-server.ts';
import { startHarness, waitFor, type Harness } from '../../../helpers/harness.ts';
import { testToolContext } from '../../../helpers/tools.ts';
import { unconfinedSandbox } from '../../../helpers/sandbox.ts';

const STDIO_SERVER = path.resolve(import.meta.dirname, '../../../fakes/mcp/stdio-server.ts');
const ctx = testToolContext();
const log = createLogger('silent');

function configFile(httpUrl: string): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'cs-mcp-')), 'mcp.json');
  writeFileSync(
    file,
    JSON.stringify({
      mcpServers: {
        // Sandboxed where a test runs the app: it reads only its own files and the modules they import.
        ops: {
          command: process.execPath,
          args: [STDIO_SERVER],
          approval: { note: 'never' },
          sandbox: {
            read: [path.dirname(STDIO_SERVER), path.resolve(import.meta.dirname, '../../../../node_modules')],
          },
        },
        web: { url: httpUrl, headers: { Authorization: 'Bearer ${WEB_TOKEN}' }, approval: { get_status: 'always' } },
      },
    }),
  );
  return file;
}

async function call(hub: McpHub, name: string, args: Record<string, unknown>): Promise<Required<ToolOutput>> {
  const tool = hub.tools().find((t) => t.name === name);
  if (!tool) throw new Error(`no tool ${name}`);
  const out = await tool.execute(tool.input.parse(args), ctx);
  return typeof out === 'string' ? { content: out, isError: false } : { isError: false, ...out };
}

describe('MCP servers over stdio and Streamable HTTP', () => {
  let http: FakeMcpHttp;
  let hub: McpHub;
  const tool = (name: string) => hub.tools().find((t) => t.name === name) as AnyTool;

  beforeAll(async () => {
    http = await startFakeMcpHttp('web-token');
    hub = new McpHub(loadMcpConfig(configFile(http.url), { WEB_TOKEN: 'web-token' }), log, unconfinedSandbox());
    await hub.start();
  });
  afterAll(async () => {
    await hub.close();
    await http.close();
  });

  it('offers every server’s tools to the model as server__tool', () => {
    const names = hub.tools().map((t) => t.name);
    expect(names.filter((n) => n.startsWith('ops__')).sort()).toEqual(
      [
        'ops__add_tool',
        'ops__crash',
        'ops__crash_now',
        'ops__fail',
        'ops__get_status',
        'ops__hang',
        'ops__note',
        'ops__restart',
        namespacedName('ops', 'logs.tail'),
      ].sort(),
    );
    expect(names.filter((n) => n.startsWith('web__'))).toHaveLength(9);
    for (const name of names) expect(name).toMatch(MODEL_TOOL_NAME);
  });

  it('cleans a name the model would refuse and keeps it unique with a hash of the original', () => {
    expect(namespacedName('ops', 'logs.tail')).toMatch(/^ops__logs_tail_[0-9a-f]{8}$/);
    expect(namespacedName('ops', 'logs.tail')).not.toBe(namespacedName('ops', 'logs/tail'));
    expect(namespacedName('ops', 'x'.repeat(80))).toHaveLength(64);
    expect(namespacedName('ops', 'logs_tail')).toBe('ops__logs_tail');
  });

  it('gives the model the server’s own JSON Schema', () => {
    expect(toolSpec(tool('web__restart'))).toMatchObject({
      name: 'web__restart',
      description: '[MCP server web] Restarts a service',
      inputSchema: { type: 'object', properties: { service: { type: 'string' } }, required: ['service'] },
    });
  });

  it('checks arguments against that schema before anything runs', () => {
    const input = tool('ops__restart').input;
    expect(input.safeParse({ service: 'api' }).success).toBe(true);
    expect(input.safeParse({}).error?.issues[0]?.message).toBe("arguments must have required property 'service'");
    expect(input.safeParse({ service: 5 }).error?.issues[0]?.message).toBe('arguments/service must be string');
  });

  it('refuses an argument the schema does not declare, whatever additionalProperties says', () => {
    // The schema allows extra properties (no additionalProperties: false): a key the server would
    // ignore must still not reach the policy, where a `paths:` or `args:` condition could read it.
    const input = tool('ops__restart').input;
    expect(input.safeParse({ service: 'api', path: 'sandbox/x' }).error?.issues[0]?.message).toBe(
      'ops__restart has no argument "path"; send only the arguments its schema declares',
    );
  });

  it('runs a read-only tool at once and asks before a destructive or unannotated one', () => {
    const policy = (name: string) => [needsApproval(tool(name), {}) ? 'asks' : 'runs', riskOf(tool(name), {})];
    expect(policy('ops__get_status')).toEqual(['runs', 'low']);
    expect(policy('ops__restart')).toEqual(['asks', 'high']);
    expect(policy('web__note')).toEqual(['asks', 'medium']);
    expect(tool('ops__get_status').idempotent).toBe(true);
    expect(tool('ops__restart').idempotent).toBe(false);
  });

  it('lets the config override the annotations either way', () => {
    expect(needsApproval(tool('ops__note'), {})).toBe(false); // unannotated, overridden to "never"
    expect(needsApproval(tool('web__get_status'), {})).toBe(true); // read-only, overridden to "always"
  });

  it('versions a tool by its schema and annotations, so a changed tool is a new approval scope', () => {
    expect(tool('ops__get_status').version).toBe(tool('web__get_status').version);
    expect(tool('ops__get_status').version).not.toBe(tool('ops__restart').version);
    expect(tool('ops__get_status').version).toMatch(/^[0-9a-f]{12}$/);
  });

  it('calls tools over stdio, and over HTTP with the configured bearer token', async () => {
    expect(await call(hub, 'ops__get_status', { service: 'api' })).toEqual({
      content: 'stdio: api is healthy',
      isError: false,
    });
    expect(await call(hub, 'web__get_status', { service: 'db' })).toEqual({
      content: 'http: db is healthy',
      isError: false,
    });
    expect(http.authorizations.length).toBeGreaterThan(0);
    expect(new Set(http.authorizations)).toEqual(new Set(['Bearer web-token']));
  });

  it('passes a tool’s own error back as a tool error', async () => {
    expect(await call(hub, 'web__fail', {})).toEqual({ content: 'the database is read-only', isError: true });
  });

  it('picks up tools a server adds while running', async () => {
    let told = 0;
    const stop = hub.onToolsChanged(() => told++);
    await call(hub, 'ops__add_tool', { name: 'flush_cache' });
    await waitFor(
      async () => (hub.tools().some((t) => t.name === 'ops__flush_cache') ? true : undefined),
      10_000,
      'the new tool',
    );
    expect(told).toBeGreaterThan(0);
    expect(await call(hub, 'ops__flush_cache', {})).toEqual({ content: 'stdio: flush_cache works', isError: false });
    stop();
  });

  it('says the outcome is unknown when the server dies during a call', async () => {
    const result = await call(hub, 'ops__crash_now', {});
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(
      /^The connection to the MCP server "ops" was lost during the call, so whether crash_now took effect is unknown/,
    );
    await waitFor(async () => (hub.isConnected('ops') ? true : undefined), 30_000, 'the stdio server to come back');
  });

  it('reports a stdio server that died as unavailable, keeps its tools, and uses it again once restarted', async () => {
    await call(hub, 'ops__crash', {});
    const unavailable = await waitFor(
      async () => {
        const result = await call(hub, 'ops__get_status', { service: 'api' });
        return result.content === unavailableMessage('ops') ? result : undefined;
      },
      10_000,
      'the stdio server to be noticed dead',
    );
    expect(unavailable).toEqual({
      content: 'The MCP server "ops" is unavailable right now; try again later.',
      isError: true,
    });
    expect(hub.tools().some((t) => t.name === 'ops__get_status')).toBe(true);
    await waitFor(async () => (hub.isConnected('ops') ? true : undefined), 30_000, 'the stdio server to come back');
    expect(await call(hub, 'ops__get_status', { service: 'api' })).toEqual({
      content: 'stdio: api is healthy',
      isError: false,
    });
  });

  it('does the same for an HTTP server that goes away and comes back on its address', async () => {
    const port = http.port;
    await http.close();
    expect(await call(hub, 'web__get_status', { service: 'db' })).toEqual({
      content: unavailableMessage('web'),
      isError: true,
    });
    expect(hub.tools().filter((t) => t.name.startsWith('web__'))).toHaveLength(9);
    http = await startFakeMcpHttp('web-token', port);
    await waitFor(
      async () => {
        const result = await call(hub, 'web__get_status', { service: 'db' });
        return result.isError ? undefined : result;
      },
      60_000,
      'the HTTP server to come back',
    );
    expect(await call(hub, 'web__get_status', { service: 'db' })).toEqual({
      content: 'http: db is healthy',
      isError: false,
    });
  });
});

describe('an MCP server that is down at start-up', () => {
  it('does not hold up start, and its tools appear once it is reachable', async () => {
    const probe = await startFakeMcpHttp('t');
    const port = probe.port;
    await probe.close();
    const config = parseMcpConfig({
      mcpServers: { late: { url: `http://127.0.0.1:${port}/mcp`, headers: { Authorization: 'Bearer t' } } },
    });
    const hub = new McpHub(config, log, unconfinedSandbox());
    let http: FakeMcpHttp | undefined;
    try {
      await hub.start(5_000);
      expect(hub.tools()).toEqual([]);
      expect(hub.state('late')).toBe('down');
      http = await startFakeMcpHttp('t', port);
      await waitFor(async () => (hub.tools().length > 0 ? true : undefined), 60_000, 'the late server’s tools');
      expect(await call(hub, 'late__get_status', { service: 'x' })).toEqual({
        content: 'http: x is healthy',
        isError: false,
      });
    } finally {
      await hub.close();
      await http?.close();
    }
  });

  it('is reported unreachable when the bearer token is wrong, without hanging start', async () => {
    const http = await startFakeMcpHttp('right');
    const hub = new McpHub(
      parseMcpConfig({ mcpServers: { auth: { url: http.url, headers: { Authorization: 'Bearer wrong' } } } }),
      log,
      unconfinedSandbox(),
    );
    try {
      await hub.start(5_000);
      expect(hub.state('auth')).toBe('down');
      expect(http.authorizations).toContain('Bearer wrong');
    } finally {
      await hub.close();
      await http.close();
    }
  });
});

describe('MCP tools in a conversation', () => {
  let http: FakeMcpHttp;
  let h: Harness;
  beforeAll(async () => {
    http = await startFakeMcpHttp('web-token');
    process.env.WEB_TOKEN = 'web-token';
    h = await startHarness({
      env: { MCP_CONFIG: configFile(http.url) },
      script: {
        rules: [
          {
            rounds: [
              { toolCalls: [{ name: 'web__note', args: { text: 'checking' } }] },
              { toolCalls: [{ name: 'ops__get_status', args: { service: 'api' } }] },
              { toolCalls: [{ name: 'web__restart', args: { service: 'api' } }] },
              { text: 'Done: {{lastToolResult}}' },
            ],
          },
        ],
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await http.close();
    delete process.env.WEB_TOKEN;
  });

  it('runs the read-only tool at once and asks before the others', async () => {
    const item = await h.say('mcp', 'restart api if healthy');
    expect((await h.settled(item.id)).status).toBe('awaiting_approval');
    const first = await waitFor(
      async () =>
        (
          await h.app.pool.query(
            `SELECT nonce, calls FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
            [item.id],
          )
        ).rows[0] as { nonce: string; calls: string } | undefined,
      10_000,
      'the card',
    );
    // An unannotated tool may be destructive (the MCP spec's default): high risk, with a card.
    expect(JSON.parse(first.calls)).toEqual([
      {
        id: expect.any(String),
        name: 'web__note',
        args: { text: 'checking' },
        risk: 'high',
        policy: expect.objectContaining({
          outcome: 'ask',
          rule: { name: 'default:mcp-unannotated', source: 'built-in' },
        }),
      },
    ]);
    const click = await h.app.approvals.click(`${first.nonce}.A`, { platform: 'test', userId: 'U1' });
    if (!click.ok || !('continuation' in click)) throw new Error('expected a continuation');
    expect((await h.settled(click.continuation.id)).status).toBe('awaiting_approval');
    const executed = await h.app.pool.query(
      `SELECT tool FROM countersign.tool_executions WHERE work_item_id IN ($1, $2) ORDER BY started_at`,
      [item.id, click.continuation.id],
    );
    expect(executed.rows.map((r) => r.tool)).toEqual(['web__note', 'ops__get_status']);
  });
});

describe("a remote MCP server's read-only hint", () => {
  let http: FakeMcpHttp;
  beforeAll(async () => {
    http = await startFakeMcpHttp('hint-token');
  });
  afterAll(() => http.close());

  /** One turn calling the remote server's read-only get_status, with the server trusted or not. */
  async function statusTurn(trusted: boolean | undefined) {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'cs-mcp-')), 'mcp.json');
    const server = { url: http.url, headers: { Authorization: 'Bearer hint-token' } };
    writeFileSync(
      file,
      JSON.stringify({ mcpServers: { remote: trusted === undefined ? server : { ...server, trusted } } }),
    );
    const h = await startHarness({
      env: { MCP_CONFIG: file },
      script: {
        rules: [
          {
            rounds: [
              { toolCalls: [{ name: 'remote__get_status', args: { service: 'api' } }] },
              { text: 'Status: {{lastToolResult}}' },
            ],
          },
        ],
      },
    });
    try {
      await waitFor(async () => (h.app.tools.get('remote__get_status') ? true : undefined), 20_000, 'the remote tool');
      const item = await h.say('hint', 'status?');
      const settled = await h.settled(item.id);
      const { rows } = await h.app.pool.query(
        `SELECT calls FROM countersign.approval_envelopes WHERE work_item_id = $1`,
        [item.id],
      );
      return { status: settled.status, text: settled.result?.text, calls: rows.map((r) => JSON.parse(r.calls)) };
    } finally {
      await h.stop();
    }
  }

  it('asks a person when the server is remote and not marked trusted: its hint is its own word', async () => {
    const turn = await statusTurn(undefined);
    expect(turn.status).toBe('awaiting_approval');
    expect(turn.calls[0][0].policy.rule.name).toBe('default:mcp-read-untrusted');
  });

  it('runs at once when the MCP config marks the remote server trusted', async () => {
    const turn = await statusTurn(true);
    expect(turn.status).toBe('done');
    expect(turn.text).toBe('Status: http: api is healthy');
    expect(turn.calls).toEqual([]);
  });
});

/** A logger whose lines the test can read, to see what start-up told the operator. */
function capturingLogger() {
  const lines: Array<{ level: number; msg: string; mcpServer?: string }> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe('MCP configs pasted from other clients', () => {
  it('connects to a legacy SSE server ("type": "sse") with the configured headers and calls its tools', async () => {
    const sse = await startFakeMcpSse('sse-token');
    const hub = new McpHub(
      parseMcpConfig({
        mcpServers: { legacy: { type: 'sse', url: sse.url, headers: { Authorization: 'Bearer sse-token' } } },
      }),
      log,
      unconfinedSandbox(),
    );
    try {
      await hub.start();
      expect(hub.isConnected('legacy')).toBe(true);
      expect(await call(hub, 'legacy__get_status', { service: 'db' })).toEqual({
        content: 'sse: db is healthy',
        isError: false,
      });
      expect(new Set(sse.authorizations)).toEqual(new Set(['Bearer sse-token']));
    } finally {
      await hub.close();
      await sse.close();
    }
  });

  it('does not start a disabled server, and says so in the log', async () => {
    const { logger, lines } = capturingLogger();
    const hub = new McpHub(
      parseMcpConfig({
        mcpServers: {
          ops: { command: process.execPath, args: [STDIO_SERVER] },
          off: { command: process.execPath, args: [STDIO_SERVER], disabled: true },
        },
      }),
      logger,
      unconfinedSandbox(),
    );
    try {
      await hub.start();
      expect(hub.state('off')).toBeUndefined();
      expect(hub.tools().some((t) => t.name.startsWith('off__'))).toBe(false);
      expect(hub.tools().some((t) => t.name.startsWith('ops__'))).toBe(true);
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 30,
          mcpServer: 'off',
          msg: 'MCP server "off" is disabled in the config ("disabled": true); not started',
        }),
      );
    } finally {
      await hub.close();
    }
  });

  it('still asks before a tool listed in autoApprove, and warns that the list was ignored', async () => {
    const { logger, lines } = capturingLogger();
    const hub = new McpHub(
      parseMcpConfig({
        mcpServers: { ops: { command: process.execPath, args: [STDIO_SERVER], autoApprove: ['restart', 'note'] } },
      }),
      logger,
      unconfinedSandbox(),
    );
    try {
      await hub.start();
      const restart = hub.tools().find((t) => t.name === 'ops__restart') as AnyTool;
      const note = hub.tools().find((t) => t.name === 'ops__note') as AnyTool;
      expect(needsApproval(restart, {})).toBe(true);
      expect(needsApproval(note, {})).toBe(true);
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 40,
          msg: expect.stringContaining('MCP server "ops": "autoApprove" (restart, note) is ignored'),
        }),
      );
    } finally {
      await hub.close();
    }
  });

  it('gives up on a call after the server entry’s own timeout, in seconds', async () => {
    const hub = new McpHub(
      parseMcpConfig({ mcpServers: { ops: { command: process.execPath, args: [STDIO_SERVER], timeout: 0.5 } } }),
      log,
      unconfinedSandbox(),
    );
    try {
      await hub.start();
      expect(await call(hub, 'ops__hang', {})).toEqual({
        content: 'The MCP server "ops" did not answer hang within 0.5 s; its outcome is unknown.',
        isError: true,
      });
    } finally {
      await hub.close();
    }
  });
});

describe('shutting down a Streamable HTTP connection', () => {
  it('ends the session with a DELETE the server sees', async () => {
    const server = await startFakeMcpHttp('t', { sessions: true });
    const hub = new McpHub(
      parseMcpConfig({ mcpServers: { web: { url: server.url, headers: { Authorization: 'Bearer t' } } } }),
      log,
      unconfinedSandbox(),
    );
    try {
      await hub.start();
      expect(await call(hub, 'web__get_status', { service: 'db' })).toMatchObject({ isError: false });
      expect(server.sessions).toHaveLength(1);
      expect(server.deletedSessions).toEqual([]);
      await hub.close();
      expect(server.deletedSessions).toEqual(server.sessions);
    } finally {
      await hub.close();
      await server.close();
    }
  });
});
