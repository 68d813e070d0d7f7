import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { ToolRegistry } from '../../../src/agent/tools/registry.ts';
import { defineTool, type AnyTool } from '../../../src/agent/tools/tool.ts';

function tool(name: string, version = '1', server?: string): AnyTool {
  return defineTool({
    name,
    description: name,
    version,
    input: z.object({}),
    approval: 'never',
    risk: 'low',
    idempotent: true,
    ...(server ? { kind: 'mcp' as const, mcp: { server, trusted: true } } : {}),
    execute: async () => name,
  });
}

describe('the tool registry', () => {
  it('drops an MCP tool its server no longer lists, keeps the others and every built-in tool', () => {
    const registry = new ToolRegistry([
      tool('read_file'),
      tool('ops__status', '1', 'ops'),
      tool('ops__restart', '1', 'ops'),
    ]);
    registry.replaceMcpTools([tool('ops__status', '2', 'ops'), tool('web__fetch', '1', 'web')]);
    expect(registry.fingerprint()).toEqual([
      { name: 'ops__status', version: '2' },
      { name: 'read_file', version: '1' },
      { name: 'web__fetch', version: '1' },
    ]);
    expect(registry.specs().map((s) => s.name)).not.toContain('ops__restart');
  });

  it('fingerprints only the named tools, for an approval that depends on them alone', () => {
    const registry = new ToolRegistry([tool('a'), tool('b'), tool('c')]);
    expect(registry.fingerprint(['c', 'a', 'gone'])).toEqual([
      { name: 'a', version: '1' },
      { name: 'c', version: '1' },
    ]);
  });
});
