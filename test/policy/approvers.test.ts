import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtinPolicy, loadPolicyFile } from '../../src/policy/index.ts';
import { platforms } from './helpers.ts';

describe("the policy's approvers (who may also stop someone else's turn)", () => {
  it('match roles, full and short forms, the short Slack form only in a home workspace', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'cs-policy-')), 'policy.yaml');
    writeFileSync(file, 'version: 1\nworkspaces: [slack:T0HOME001]\napprovers: [discord-role:222, slack:U0SRE0001]\n');
    const loaded = loadPolicyFile(file, { platforms });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    const policy = loaded.policy;
    const guild = { platform: 'discord', workspace: 'G1', channel: '5', dm: false };
    expect(policy.isApprover({ platform: 'discord', workspace: 'G1', user: '9', groups: ['222'] }, guild)).toBe(true);
    expect(policy.isApprover({ platform: 'discord', workspace: 'G1', user: '9', groups: ['333'] }, guild)).toBe(false);
    const slack = { platform: 'slack', workspace: 'T0HOME001', channel: 'C1', dm: false };
    expect(policy.isApprover({ platform: 'slack', workspace: 'T0HOME001', user: 'U0SRE0001' }, slack)).toBe(true);
    // The same-looking id issued by another org is someone else.
    expect(policy.isApprover({ platform: 'slack', workspace: 'T0OTHER01', user: 'U0SRE0001' }, slack)).toBe(false);
  });

  it('are APPROVERS without a policy file', () => {
    const policy = builtinPolicy({ platforms, approvers: ['slack:T0HOME001:U0BOB0001'] });
    const where = { platform: 'slack', workspace: 'T0HOME001', channel: 'C1', dm: false };
    expect(policy.isApprover({ platform: 'slack', workspace: 'T0HOME001', user: 'U0BOB0001' }, where)).toBe(true);
    expect(policy.isApprover({ platform: 'slack', workspace: 'T0HOME001', user: 'U0EVE0001' }, where)).toBe(false);
  });

  it("lets a rule naming a channel cover the bot's threads in it (Discord threads are channels)", () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'cs-policy-')), 'policy.yaml');
    writeFileSync(
      file,
      'version: 1\nrules:\n  - name: ops-deploys\n    tool: deploy__*\n    where: { channels: [discord:555] }\n    outcome: ask\n',
    );
    const loaded = loadPolicyFile(file, { platforms });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    const decide = (where: { channel: string; parentChannel?: string }) =>
      loaded.policy.decide({
        tool: { name: 'deploy__apply', kind: 'mcp', mcp: { server: 'deploy', trusted: true, destructiveHint: true } },
        args: {},
        where: { platform: 'discord', workspace: 'G1', dm: false, ...where },
        requester: { platform: 'discord', workspace: 'G1', user: '9' },
      }).rule.name;
    expect(decide({ channel: '555' })).toBe('ops-deploys');
    expect(decide({ channel: '777', parentChannel: '555' })).toBe('ops-deploys');
    expect(decide({ channel: '777', parentChannel: '666' })).not.toBe('ops-deploys');
  });
});
