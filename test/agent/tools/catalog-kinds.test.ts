import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { platformDirectory } from '../../../src/adapters/registry.ts';
import { buildToolCatalog, builtinToolKind, builtinTools, kindsByName } from '../../../src/agent/tools/catalog.ts';
import { ToolRegistry } from '../../../src/agent/tools/registry.ts';
import { PolicyGate } from '../../../src/approval/gate.ts';
import { createLogger } from '../../../src/log.ts';
import { builtinPolicy } from '../../../src/policy/index.ts';
import { TOOL_KINDS } from '../../../src/policy/schema.ts';
import { createSkillTools } from '../../../src/skills/index.ts';
import { runCli } from '../../helpers/processes.ts';

const noSkills = { list: () => [], get: () => undefined };
const ownTools = () => [...builtinTools(mkdtempSync(path.join(tmpdir(), 'cs-kinds-'))), ...createSkillTools(noSkills)];

/** The kinds the built-in policy's rules were written for (formerly a table in src/policy/cli.ts). */
const EXPECTED_KINDS = {
  list_files: 'read',
  read_file: 'read',
  search_files: 'read',
  current_time: 'read',
  list_skills: 'read',
  load_skill: 'read',
  read_skill_file: 'read',
  write_file: 'write',
  edit_file: 'write',
  delete_file: 'delete',
  run_command: 'exec',
  request_human_approval: 'question',
};

describe('each tool says its own policy kind', () => {
  it('gives every one of Countersign’s tools a kind the policy knows, on the tool itself', () => {
    const tools = ownTools();
    for (const tool of tools) expect(TOOL_KINDS).toContain(tool.kind);
    expect(Object.fromEntries(kindsByName(tools))).toEqual(EXPECTED_KINDS);
  });

  it('registers only tools with a kind from the catalog a deployment builds', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'cs-kinds-'));
    const config = { AGENT_WORKSPACE_ROOT: root, MCP_CONFIG: undefined, ENABLE_RUN_COMMAND: true };
    const catalog = await buildToolCatalog(config, createLogger('silent'), { mcp: false });
    try {
      expect(catalog.tools.length).toBeGreaterThan(0);
      for (const tool of catalog.tools) expect(tool.kind, tool.name).toBeDefined();
    } finally {
      await catalog.close();
    }
  });

  it('judges a call to a built-in tool this process did not register by that tool’s kind', () => {
    const platforms = platformDirectory();
    const policy = builtinPolicy({ platforms });
    const gate = new PolicyGate({ current: () => policy }, new ToolRegistry(), platforms);
    expect(builtinToolKind('delete_file')).toBe('delete');
    expect(gate.judge({ name: 'delete_file', args: { path: 'x' } }).tool).toEqual({
      name: 'delete_file',
      kind: 'delete',
    });
    expect(gate.judge({ name: 'github__create_issue', args: {} }).tool.kind).toBe('mcp');
    expect(gate.judge({ name: 'made_up', args: {} }).tool.kind).toBe('exec');
  });

  it('lets `countersign policy check` name the kind of every built-in tool, skills’ and features’ too, without --kind', async () => {
    for (const tool of ['delete_file', 'load_skill', 'merge_change', 'schedule_task', 'share_file', 'use_repository']) {
      const run = runCli(['policy', 'check', '--as', 'discord:1:2', '--tool', tool], { LOG_LEVEL: 'silent' });
      const { code } = await run.exited;
      expect({ tool, code, err: run.stderr() }).toEqual({ tool, code: 0, err: '' });
      expect(run.stdout()).toMatch(/^outcome: /);
    }
  });
});
