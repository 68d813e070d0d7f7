import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpHub } from '../../src/agent/tools/mcp/hub.ts';
import { loadMcpConfig } from '../../src/agent/tools/mcp/config.ts';
import { needsApproval, riskOf, type AnyTool } from '../../src/agent/tools/tool.ts';
import { toolSpec } from '../../src/agent/tools/tool.ts';
import { testToolContext } from '../helpers/tools.ts';
import { createLogger } from '../../src/log.ts';
import { startFakeMcpHttp, type FakeMcpHttp } from '../fakes/mcp/http-server.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';

const STDIO_SERVER = path.resolve(import.meta.dirname, '../fakes/mcp/stdio-server.ts');
const ctx = testToolContext();

function writeConfig(httpUrl: string): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'cs-mcp-')), 'mcp.json');
  writeFileSync(
    file,
    JSON.stringify({
      mcpServers: {
        ops: { command: process.execPath, args: [STDIO_SERVER], approval: { note: 'never' } },
        web: { url: httpUrl, headers: { Authorization: 'Bearer web-token' } },
      },
    }),
  );
  return file;
}

describe('MCP servers', () => {
  let http: FakeMcpHttp;
  let hub: McpHub;
  const tool = (name: string) => hub.tools().find((t) => t.name === name) as AnyTool;
  const call = async (name: string, args: Record<string, unknown>) => {
    const out = await tool(name).execute(args, ctx);
    return typeof out === 'string' ? { content: out, isError: false } : out;
  };

  beforeAll(async () => {
    http = await startFakeMcpHttp('web-token');
    hub = new McpHub(loadMcpConfig(writeConfig(http.url)), createLogger('silent'));
    await hub.start();
  });
  afterAll(async () => {
    await hub.close();
    await http.close();
  });

  it('offers every server’s tools namespaced by server, with the servers’ own JSON Schemas', () => {
    expect(
      hub
        .tools()
        .map((t) => t.name)
        .sort(),
    ).toEqual([
      'ops__crash',
      'ops__get_status',
      'ops__note',
      'ops__restart',
      'web__crash',
      'web__get_status',
      'web__note',
      'web__restart',
    ]);
    expect(toolSpec(tool('web__get_status')).inputSchema).toMatchObject({
      type: 'object',
      properties: { service: { type: 'string' } },
      required: ['service'],
    });
  });

  it('takes approval from the annotations unless the config overrides it', () => {
    const policy = (name: string) => [needsApproval(tool(name), {}), riskOf(tool(name), {})];
    expect(policy('web__get_status')).toEqual([false, 'low']);
    expect(policy('web__restart')).toEqual([true, 'high']);
    expect(policy('web__note')).toEqual([true, 'medium']);
    expect(policy('ops__note')).toEqual([false, 'medium']); // overridden to "never"
  });

  it('calls tools over stdio and over Streamable HTTP with the configured bearer token', async () => {
    expect(await call('ops__get_status', { service: 'api' })).toEqual({
      content: 'stdio: api is healthy',
      isError: false,
    });
    expect(await call('web__get_status', { service: 'db' })).toEqual({
      content: 'http: db is healthy',
      isError: false,
    });
    expect(new Set(http.authorizations)).toEqual(new Set(['Bearer web-token']));
  });

  it('reports a server that died as unavailable, keeps its tools, and uses it again once it is back', async () => {
    await call('ops__crash', {});
    const unavailable = await waitFor(
      async () => {
        const result = await call('ops__get_status', { service: 'api' });
        return result.isError ? result : undefined;
      },
      10_000,
      'the stdio server to be noticed dead',
    );
    expect(unavailable.content).toBe('The ops tool server is unavailable right now; try again later.');
    expect(hub.tools().some((t) => t.name === 'ops__get_status')).toBe(true);
    // The client restarts the stdio server with backoff.
    await waitFor(async () => (hub.isConnected('ops') ? true : undefined), 20_000, 'the stdio server to come back');
    expect(await call('ops__get_status', { service: 'api' })).toEqual({
      content: 'stdio: api is healthy',
      isError: false,
    });
  });

  it('does the same for an HTTP server that goes away and comes back on its address', async () => {
    const port = http.port;
    await http.close();
    expect((await call('web__get_status', { service: 'db' })).content).toBe(
      'The web tool server is unavailable right now; try again later.',
    );
    http = await startFakeMcpHttp('web-token', port);
    await waitFor(async () => (hub.isConnected('web') ? true : undefined), 30_000, 'the HTTP server to come back');
    expect(await call('web__get_status', { service: 'db' })).toEqual({
      content: 'http: db is healthy',
      isError: false,
    });
  });
});

describe('MCP tools in a conversation', () => {
  let http: FakeMcpHttp;
  let h: Harness;
  beforeAll(async () => {
    http = await startFakeMcpHttp('web-token');
    h = await startHarness({
      env: { MCP_CONFIG: writeConfig(http.url) },
      script: {
        rules: [
          {
            rounds: [
              { toolCalls: [{ name: 'web__get_status', args: { service: 'api' } }] },
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
  });

  it('runs the read-only tool at once and asks before the destructive one', async () => {
    const item = await h.say('mcp', 'restart api if healthy');
    expect((await h.settled(item.id)).status).toBe('awaiting_approval');
    const executed = await h.app.pool.query(`SELECT tool FROM countersign.tool_executions WHERE work_item_id = $1`, [
      item.id,
    ]);
    expect(executed.rows.map((r) => r.tool)).toEqual(['web__get_status']);
    const envelope = await waitFor(
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
    expect(JSON.parse(envelope.calls)).toEqual([
      { id: expect.any(String), name: 'web__restart', args: { service: 'api' }, risk: 'high' },
    ]);
    const click = await h.app.approvals.click(`${envelope.nonce}.A`, { platform: 'test', userId: 'U1' });
    if (!click.ok || !('continuation' in click)) throw new Error('expected a continuation');
    expect((await h.settled(click.continuation.id)).result?.text).toBe('Done: http: restarted api');
  });
});

describe('MCP configuration', () => {
  const write = (text: string) => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'cs-mcp-bad-')), 'mcp.json');
    writeFileSync(file, text);
    return file;
  };
  it('names the file and the problem when the JSON is broken', () => {
    const file = write('{ "mcpServers": ');
    expect(() => loadMcpConfig(file)).toThrow(new RegExp(`MCP_CONFIG ${file} could not be read as JSON`));
  });
  it('names the server and field when an entry is wrong', () => {
    const file = write(JSON.stringify({ mcpServers: { 'bad name!': { command: 'x' }, ok: { url: 'not a url' } } }));
    expect(() => loadMcpConfig(file)).toThrow(
      /mcpServers\.bad name!: Invalid key in record; mcpServers\.ok\.url: Invalid URL/,
    );
    expect(() => loadMcpConfig(file)).toThrow(/is not valid/);
  });
});
