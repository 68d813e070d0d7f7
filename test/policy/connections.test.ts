import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPolicyFile, type ToolDescriptor } from '../../src/policy/index.ts';
import { platforms } from './helpers.ts';

/** Rules about per-person connections (docs/connections.md, docs/policy.md). */
function policyOf(yaml: string) {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'cs-policy-')), 'policy.yaml');
  writeFileSync(file, yaml);
  return { file, loaded: loadPolicyFile(file, { platforms }) };
}

const personal: ToolDescriptor = {
  name: 'tracker__create_issue',
  kind: 'mcp',
  mcp: { server: 'tracker', trusted: false, personal: true },
};
const shared: ToolDescriptor = { name: 'wiki__create_page', kind: 'mcp', mcp: { server: 'wiki', trusted: false } };
const builtin: ToolDescriptor = { name: 'write_file', kind: 'write' };
const requester = { platform: 'slack', workspace: 'T0OPS0001', user: 'U0DEV0001' };
const where = (channel: string) => ({ platform: 'slack', workspace: 'T0OPS0001', channel, dm: false });

describe('policy rules about per-person connections', () => {
  it('can forbid per-person servers in a channel, leaving shared servers and other channels alone', () => {
    const { loaded } = policyOf(
      [
        'version: 1',
        'rules:',
        '  - name: no-personal-accounts-in-public',
        "    tool: '*'",
        '    mcp: { personal: true }',
        '    where: { channels: [slack:C0PUBLIC01] }',
        '    outcome: deny',
        '    message: Personal accounts are not used in this channel.',
      ].join('\n'),
    );
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    const decide = (tool: ToolDescriptor, channel: string) =>
      loaded.policy.decide({ tool, args: {}, where: where(channel), requester });
    expect(decide(personal, 'C0PUBLIC01')).toMatchObject({
      outcome: 'deny',
      message: 'Personal accounts are not used in this channel.',
    });
    expect(decide(personal, 'C0PRIVATE1').outcome).not.toBe('deny');
    expect(decide(shared, 'C0PUBLIC01').rule.name).not.toBe('no-personal-accounts-in-public');
  });

  it('with connection: required, runs a matched call only as the requester’s own account', () => {
    const { loaded } = policyOf(
      [
        'version: 1',
        'rules:',
        '  - name: issues-as-yourself',
        "    tool: ['*__create_*', write_file]",
        '    connection: required',
        '    outcome: allow',
      ].join('\n'),
    );
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    const decide = (tool: ToolDescriptor) => loaded.policy.decide({ tool, args: {}, where: where('C1'), requester });
    expect(decide(personal)).toMatchObject({ outcome: 'allow', rule: { name: 'issues-as-yourself' } });
    const refused = decide(shared);
    expect(refused).toMatchObject({ outcome: 'deny', rule: { name: 'issues-as-yourself' }, grantable: false });
    expect(refused.message).toContain('its server wiki uses one shared credential');
    expect(decide(builtin)).toMatchObject({ outcome: 'deny' });
  });

  it('reports a misspelt connection value with its line', () => {
    const { file, loaded } = policyOf(
      ['version: 1', 'rules:', '  - tool: tracker__*', '    connection: yes', '    outcome: allow'].join('\n'),
    );
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    expect(loaded.problems).toEqual([
      expect.objectContaining({ file, line: 4, message: expect.stringContaining('expected connection: required') }),
    ]);
  });
});
