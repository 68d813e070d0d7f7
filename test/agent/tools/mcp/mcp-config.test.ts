import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadMcpConfig, parseMcpConfig } from '../../../../src/agent/tools/mcp/config.ts';

const FIXTURE = path.resolve(import.meta.dirname, '../../../fixtures/tools/mcp/claude-desktop.json');
const write = (text: string) => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'cs-mcp-config-')), 'mcp.json');
  writeFileSync(file, text);
  return file;
};

describe('MCP configuration', () => {
  it('reads the common mcpServers file, with approval overrides and ${VAR} references filled from the environment', () => {
    expect(loadMcpConfig(FIXTURE, { GITHUB_TOKEN: 'ghp_1', LINEAR_TOKEN: 'lin_2' })).toEqual({
      mcpServers: {
        github: {
          command: 'npx',
          args: ['-y', '@modelcontextprotocol/server-github'],
          env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'ghp_1' },
          approval: { search_repositories: 'never', create_issue: 'always' },
          disabled: false,
          sandbox: { network: false, read: [], write: [] },
        },
        linear: {
          type: 'http',
          url: 'https://mcp.linear.app/mcp',
          headers: { Authorization: 'Bearer lin_2' },
          approval: {},
          disabled: false,
        },
      },
      warnings: [],
    });
  });

  it('names the variable and the server when a reference is not set', () => {
    expect(() => loadMcpConfig(FIXTURE, { GITHUB_TOKEN: 'x' })).toThrow(
      'MCP server "linear": header Authorization refers to ${LINEAR_TOKEN}, which is not set in the environment',
    );
  });

  it('names the file and the problem when the JSON is broken', () => {
    const file = write('{ "mcpServers": ');
    expect(() => loadMcpConfig(file)).toThrow(`MCP_CONFIG ${file} could not be read as JSON`);
  });

  it.each([
    [
      'neither command nor url',
      { ok: { args: [] } },
      'MCP server "ok": give either "command" (a program to run over stdio) or "url" (a Streamable HTTP or SSE endpoint)',
    ],
    [
      'both command and url',
      { ok: { command: 'x', url: 'http://127.0.0.1/' } },
      'MCP server "ok": give either "command" (a program to run over stdio) or "url" (a Streamable HTTP or SSE endpoint), not both',
    ],
    ['a bad URL', { ok: { url: 'not a url' } }, 'MCP server "ok": url: expected an http:// or https:// URL'],
    [
      'a misspelt approval field',
      { ok: { command: 'x', aproval: { rm: 'never' } } },
      'MCP server "ok": unknown field "aproval"',
    ],
    [
      'an unknown approval value',
      { ok: { command: 'x', approval: { rm: 'sometimes' } } },
      'MCP server "ok": approval.rm:',
    ],
    [
      'a name that cannot prefix tools',
      { 'bad name!': { command: 'x' } },
      'MCP server "bad name!": names are 1–32 characters',
    ],
    ['a name with a double underscore', { a__b: { command: 'x' } }, 'without "__"'],
  ])('names the server and field for %s', (_, mcpServers, message) => {
    expect(() => parseMcpConfig({ mcpServers }, {})).toThrow(message);
  });

  it('reports every problem at once', () => {
    expect(() => parseMcpConfig({ mcpServers: { a: { command: '' }, b: { url: 'x' } } }, {})).toThrow(
      /MCP server "a": command: .*; MCP server "b": url: /,
    );
  });

  it('refuses a header value an HTTP request cannot carry, naming the server and the header', () => {
    const mcpServers = {
      ops: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer …', 'X-Team': 'ops' } },
      linear: { url: 'https://mcp.linear.app/mcp', headers: { Authorization: 'Bearer ${LINEAR_TOKEN}' } },
    };
    expect(() => parseMcpConfig({ mcpServers }, { LINEAR_TOKEN: 'lin_\u2028x' })).toThrow(
      'MCP server "ops": header Authorization contains "…" (U+2026) at character 8, which an HTTP header cannot carry: a placeholder copied from the docs? Put the real value here; ' +
        'MCP server "linear": header Authorization contains U+2028 at character 12, which an HTTP header cannot carry',
    );
  });

  it('says what the file should look like when mcpServers is missing', () => {
    expect(() => parseMcpConfig({ server: {} })).toThrow('expected a JSON object with an "mcpServers" object');
  });
});

describe('MCP configuration pasted from other clients', () => {
  const CLINE = {
    mcpServers: {
      github: {
        command: 'npx',
        args: ['-y', '@modelcontextprotocol/server-github'],
        disabled: false,
        timeout: 90,
        autoApprove: [],
        transportType: 'stdio',
      },
      legacy: { url: 'https://mcp.example.com/sse', type: 'sse', disabled: true, alwaysAllow: [] },
      remote: { url: 'https://mcp.example.com/mcp', type: 'streamableHttp', timeout: 0.5 },
    },
  };

  it('reads Cline’s fields: disabled, timeout in seconds, the transport under type or transportType', () => {
    const config = parseMcpConfig(CLINE, {});
    expect(config.mcpServers.github).toMatchObject({ type: 'stdio', disabled: false, timeout: 90 });
    expect(config.mcpServers.legacy).toMatchObject({ type: 'sse', disabled: true });
    expect(config.mcpServers.remote).toMatchObject({ type: 'streamableHttp', timeout: 0.5 });
    expect(config.warnings).toEqual([]); // empty bypass lists grant nothing, so there is nothing to warn about
  });

  it('reads VS Code’s mcp.json, whose servers sit under "servers" next to an empty "inputs"', () => {
    const config = parseMcpConfig(
      {
        inputs: [],
        servers: {
          fetch: { type: 'stdio', command: 'uvx', args: ['mcp-server-fetch'] },
          docs: { type: 'http', url: 'https://mcp.example.com/mcp' },
        },
      },
      {},
    );
    expect(Object.keys(config.mcpServers)).toEqual(['fetch', 'docs']);
  });

  it('refuses VS Code inputs it cannot prompt for, and a file with both server keys', () => {
    expect(() => parseMcpConfig({ servers: {}, inputs: [{ id: 'token', type: 'promptString' }] }, {})).toThrow(
      '"inputs" asks VS Code to prompt for values, which a bot cannot do; reference environment variables as ${env:NAME} instead',
    );
    expect(() => parseMcpConfig({ servers: {}, mcpServers: {} }, {})).toThrow(
      'both "mcpServers" and "servers" are given; keep one',
    );
  });

  it('ignores autoApprove and alwaysAllow with a warning that says how to opt a tool out of approval', () => {
    const config = parseMcpConfig(
      {
        mcpServers: {
          ops: { command: 'x', autoApprove: ['restart', 'deploy'] },
          roo: { url: 'https://mcp.example.com/mcp', alwaysAllow: ['get_status'] },
        },
      },
      {},
    );
    expect(config.mcpServers.ops?.approval).toEqual({});
    expect(config.warnings).toEqual([
      'MCP server "ops": "autoApprove" (restart, deploy) is ignored — Countersign does not let a pasted config skip approvals; to run a tool without asking, say so per tool: "approval": {"restart": "never", "deploy": "never"}',
      'MCP server "roo": "alwaysAllow" (get_status) is ignored — Countersign does not let a pasted config skip approvals; to run a tool without asking, say so per tool: "approval": {"get_status": "never"}',
    ]);
  });

  it('names the file in every warning it loads', () => {
    const file = write(JSON.stringify({ mcpServers: { ops: { command: 'x', autoApprove: ['rm'] } } }));
    expect(loadMcpConfig(file, {}).warnings).toEqual([
      expect.stringMatching(new RegExp(`^MCP_CONFIG ${file}: MCP server "ops": "autoApprove" \\(rm\\) is ignored`)),
    ]);
  });

  it('does not need the environment variables of a disabled server', () => {
    const config = parseMcpConfig(
      { mcpServers: { off: { command: 'x', env: { TOKEN: '${UNSET_TOKEN}' }, disabled: true } } },
      {},
    );
    expect(config.mcpServers.off).toMatchObject({ disabled: true, env: { TOKEN: '${UNSET_TOKEN}' } });
  });

  it.each([
    [
      'a timeout in milliseconds',
      { ok: { command: 'x', timeout: 60000 } },
      'MCP server "ok": timeout: 60000 is more than 3600; Countersign reads "timeout" in seconds, as Cline does — if it came from a client that writes milliseconds, divide it by 1000',
    ],
    [
      'a timeout that is not a number',
      { ok: { command: 'x', timeout: '60s' } },
      'MCP server "ok": timeout: expected a number of seconds',
    ],
    [
      'disabled as text',
      { ok: { command: 'x', disabled: 'yes' } },
      'MCP server "ok": disabled: expected true or false',
    ],
    [
      'autoApprove that is not a list',
      { ok: { command: 'x', autoApprove: true } },
      'MCP server "ok": autoApprove: expected a list of tool names',
    ],
    [
      'an unknown transport',
      { ok: { url: 'http://127.0.0.1/', type: 'websocket' } },
      'MCP server "ok": type: expected one of "http", "streamable-http", "streamableHttp", "sse"',
    ],
    ['sse with a command', { ok: { command: 'x', type: 'sse' } }, 'MCP server "ok": type: "sse" needs a "url"'],
    [
      'stdio with a url',
      { ok: { url: 'http://127.0.0.1/', type: 'stdio' } },
      'MCP server "ok": type: "stdio" needs a "command"',
    ],
    [
      'a field no client gives a clear meaning',
      { ok: { command: 'x', watchPaths: ['a'] } },
      'MCP server "ok": unknown field "watchPaths"',
    ],
  ])('names the server and field for %s', (_, mcpServers, message) => {
    expect(() => parseMcpConfig({ mcpServers }, {})).toThrow(message);
  });

  it('names the file and the field when a pasted entry carries an unknown field', () => {
    const file = write(JSON.stringify({ mcpServers: { ops: { command: 'x', envFile: '.env' } } }));
    expect(() => loadMcpConfig(file, {})).toThrow(
      `MCP_CONFIG ${file} is not valid: MCP server "ops": unknown field "envFile"`,
    );
  });
});
