import { describe, expect, it } from 'vitest';
import { formatPolicyProblem, parsePolicy, type Policy } from '../../src/policy/index.ts';
import { PolicyGate } from '../../src/approval/gate.ts';
import { ToolRegistry } from '../../src/agent/tools/registry.ts';
import { platforms } from './helpers.ts';

function policy(text: string): Policy {
  const parsed = parsePolicy(text, 'policy.yaml', { platforms });
  if (!parsed.ok) throw new Error(parsed.problems.map(formatPolicyProblem).join('\n'));
  return parsed.policy;
}

const FILE = `version: 1
conversations:
  - where: { channels: [slack:C0INCIDENT] }
    mode: interrupt
  - where: { platforms: [discord], dm: true }
    mode: collect
`;

describe('conversation modes per place', () => {
  const gate = (text: string, fallback?: 'queue' | 'steer' | 'interrupt' | 'collect') =>
    new PolicyGate({ current: () => policy(text) }, new ToolRegistry(), platforms, fallback);

  it('come from the first matching entry of the policy file, then CONVERSATION_MODE, then the platform', () => {
    const g = gate(FILE);
    expect(g.conversationMode({ platform: 'slack', channel: 'C0INCIDENT', workspace: 'T1' })).toBe('interrupt');
    expect(g.conversationMode({ platform: 'discord', channel: '123' })).toBe('collect');
    expect(g.conversationMode({ platform: 'slack', channel: 'C0GENERAL', workspace: 'T1' })).toBe('steer');
    expect(g.conversationMode({ platform: 'console', channel: 'local' })).toBe('queue');
    expect(gate(FILE, 'queue').conversationMode({ platform: 'slack', channel: 'C0GENERAL' })).toBe('queue');
    expect(gate(FILE, 'queue').conversationMode({ platform: 'slack', channel: 'C0INCIDENT' })).toBe('interrupt');
  });

  it('refuses an unknown mode with its place in the file', () => {
    const parsed = parsePolicy('conversations:\n  - mode: hurry\n', 'policy.yaml', { platforms });
    expect(parsed.ok).toBe(false);
    const problems = parsed.ok ? '' : parsed.problems.map(formatPolicyProblem).join('\n');
    expect(problems).toMatch(/policy\.yaml:2:\d+: .*expected queue, steer, interrupt or collect/);
  });
});
