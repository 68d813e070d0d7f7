import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadMcpConfig, parseMcpConfig } from '../../src/agent/tools/mcp/config.ts';

const FIXTURE = path.resolve(import.meta.dirname, '../fixtures/tools/mcp/claude-desktop.json');
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
        },
        linear: {
          type: 'http',
          url: 'https://mcp.linear.app/mcp',
          headers: { Authorization: 'Bearer lin_2' },
          approval: {},
        },
      },
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
      'MCP server "ok": give either "command" (a program to run over stdio) or "url" (a Streamable HTTP endpoint)',
    ],
    [
      'both command and url',
      { ok: { command: 'x', url: 'http://127.0.0.1/' } },
      'MCP server "ok": give either "command" (a program to run over stdio) or "url" (a Streamable HTTP endpoint), not both',
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

  it('says what the file should look like when mcpServers is missing', () => {
    expect(() => parseMcpConfig({ servers: {} })).toThrow('expected a JSON object with an "mcpServers" object');
  });
});
