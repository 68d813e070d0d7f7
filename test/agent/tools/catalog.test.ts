import { currentTimeTool } from '../../../src/agent/tools/current-time.ts';
import { existsSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildToolCatalog } from '../../../src/agent/tools/catalog.ts';
import { needsApproval } from '../../../src/agent/tools/tool.ts';
import { createLogger } from '../../../src/log.ts';
import { unconfinedSandbox } from '../../helpers/sandbox.ts';

const STDIO_SERVER = path.resolve(import.meta.dirname, '../../fakes/mcp/stdio-server.ts');
const log = createLogger('silent');
const WORKSPACE_TOOLS = ['delete_file', 'edit_file', 'list_files', 'read_file', 'search_files', 'write_file'];
/** Offered by every catalog, whatever the configuration. */
const ALWAYS = ['current_time', 'request_human_approval'];
const BUILT_IN = [...ALWAYS, ...WORKSPACE_TOOLS].sort();

function tempDir(): string {
  return realpathSync(mkdtempSync(path.join(tmpdir(), 'cs-catalog-')));
}

describe('tool catalog', () => {
  it("is the one list of tools: built-in first, then the skills' and the workspace, extra ones last", async () => {
    const own = (name: string) => ({ ...currentTimeTool, name });
    const catalog = await buildToolCatalog({ AGENT_WORKSPACE_ROOT: tempDir(), ENABLE_RUN_COMMAND: false }, log, {
      skillTools: [own('use_skill')],
      extra: [own('embedded_tool')],
    });
    const names = catalog.tools.map((t) => t.name);
    expect(names.slice(0, 3)).toEqual([...ALWAYS, 'use_skill']);
    expect(names.at(-1)).toBe('embedded_tool');
    expect(names.filter((n) => WORKSPACE_TOOLS.includes(n)).sort()).toEqual(WORKSPACE_TOOLS);
    await catalog.close();
  });

  it('offers the workspace tools, creating the workspace, and leaves run_command out when it is off', async () => {
    const workspace = path.join(tempDir(), 'data', 'workspace');
    const catalog = await buildToolCatalog({ AGENT_WORKSPACE_ROOT: workspace, ENABLE_RUN_COMMAND: false }, log);
    expect(catalog.tools.map((t) => t.name).sort()).toEqual(BUILT_IN);
    expect(existsSync(workspace)).toBe(true);
    expect(catalog.workspaceRoot).toBe(workspace);
    expect(catalog.promptNotes).toEqual([expect.stringMatching(/^Running programs is switched off/)]);
    await catalog.close();
  });

  it('adds run_command, behind approval, when it is on', async () => {
    const catalog = await buildToolCatalog({ AGENT_WORKSPACE_ROOT: tempDir(), ENABLE_RUN_COMMAND: true }, log);
    const runCommand = catalog.tools.find((t) => t.name === 'run_command');
    expect(runCommand && needsApproval(runCommand, { command: ['ls'] })).toBe(true);
    expect(catalog.promptNotes).toEqual([]);
    await catalog.close();
  });

  it('resolves a relative workspace and MCP config against the current directory', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'mcp.json'), JSON.stringify({ mcpServers: {} }));
    const previous = process.cwd();
    process.chdir(dir);
    try {
      const catalog = await buildToolCatalog(
        { AGENT_WORKSPACE_ROOT: 'data/workspace', ENABLE_RUN_COMMAND: false, MCP_CONFIG: 'mcp.json' },
        log,
      );
      expect(catalog.workspaceRoot).toBe(path.join(dir, 'data/workspace'));
      expect(existsSync(catalog.workspaceRoot)).toBe(true);
      await catalog.close();
    } finally {
      process.chdir(previous);
    }
  });

  it('connects the configured MCP servers and adds their tools', async () => {
    const dir = tempDir();
    const config = path.join(dir, 'mcp.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { ops: { command: process.execPath, args: [STDIO_SERVER] } } }));
    const catalog = await buildToolCatalog(
      { AGENT_WORKSPACE_ROOT: path.join(dir, 'ws'), ENABLE_RUN_COMMAND: false, MCP_CONFIG: config },
      log,
      { sandbox: unconfinedSandbox() },
    );
    try {
      expect(catalog.tools.map((t) => t.name)).toContain('ops__get_status');
      expect(catalog.mcpTools().map((t) => t.name)).toContain('ops__restart');
      expect(
        catalog.tools
          .filter((t) => !t.name.includes('__'))
          .map((t) => t.name)
          .sort(),
      ).toEqual(BUILT_IN);
    } finally {
      await catalog.close();
    }
  });

  it('fails with the file named when the MCP config is invalid', async () => {
    const dir = tempDir();
    const config = path.join(dir, 'mcp.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { ops: { command: 'x', aproval: {} } } }));
    await expect(
      buildToolCatalog(
        { AGENT_WORKSPACE_ROOT: path.join(dir, 'ws'), ENABLE_RUN_COMMAND: false, MCP_CONFIG: config },
        log,
      ),
    ).rejects.toThrow(`MCP_CONFIG ${config} is not valid: MCP server "ops": unknown field "aproval"`);
  });
});
