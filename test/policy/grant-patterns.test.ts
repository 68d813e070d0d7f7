import { describe, expect, it } from 'vitest';
import {
  formatPolicyProblem,
  grantPatternMatches,
  narrowestGrantPattern,
  parsePolicy,
} from '../../src/policy/index.ts';
import { grantCovers, grantOffer, policyStillAllows, ruleName } from '../../src/approval/grants.ts';
import type { Decision, Where } from '../../src/policy/index.ts';
import { platforms } from './helpers.ts';

const OPS: Where = { platform: 'slack', workspace: 'T1', channel: 'C0OPS0001', dm: false };

function decide(policyText: string, tool: string, args: Record<string, unknown>, where: Where = OPS): Decision {
  const parsed = parsePolicy(policyText, 'policy.yaml', { platforms, approvers: ['slack:U0SRE0001'] });
  if (!parsed.ok) throw new Error(parsed.problems.map(formatPolicyProblem).join('\n'));
  return parsed.policy.decide({
    tool: { name: tool, kind: tool === 'run_command' ? 'exec' : 'write' },
    args,
    where,
    requester: { platform: 'slack', workspace: 'T1', user: 'U0DEV0001' },
  });
}

const TAIL = `version: 1
rules:
  - name: tail
    tool: run_command
    command: tail
    outcome: ask
    grant:
      command: ["tail -n * logs/**", "tail -n * logs/app/**"]
`;

describe('grant patterns', () => {
  it('match a command word by word; a word never climbs out of the folder it names', () => {
    expect(grantPatternMatches('command', 'tail -n * logs/**', ['tail', '-n', '100', 'logs/app/x.log'])).toBe(true);
    expect(grantPatternMatches('command', 'tail -n * logs/**', 'tail -n 100 logs/x.log')).toBe(true);
    expect(grantPatternMatches('command', 'tail -n * logs/**', ['tail', '-n', '100', 'logs/../etc/passwd'])).toBe(
      false,
    );
    expect(grantPatternMatches('command', 'tail -n * logs/**', ['tail', '-n', '100', 'logs/a', 'extra'])).toBe(false);
    // `*` is one word without a slash: it cannot swallow a path or another argument.
    expect(grantPatternMatches('command', 'tail -n * logs/**', ['tail', '-n', '/etc/passwd', 'logs/a'])).toBe(false);
    expect(grantPatternMatches('command', 'tail -n * logs/**', ['Tail', '-n', '1', 'logs/a'])).toBe(false);
  });

  it('match path arguments as normalised workspace paths, every entry of a list', () => {
    expect(grantPatternMatches('path', 'logs/**', './logs/a.log')).toBe(true);
    expect(grantPatternMatches('path', 'logs/**', 'logs/../secrets.txt')).toBe(false);
    expect(grantPatternMatches('paths', 'logs/**', ['logs/a', 'logs/b'])).toBe(true);
    expect(grantPatternMatches('paths', 'logs/**', ['logs/a', 'etc/b'])).toBe(false);
    expect(grantPatternMatches('path', 'logs/**', 42)).toBe(false);
  });

  it('pick the narrowest pattern that fits', () => {
    const both = ['tail -n * logs/**', 'tail -n * logs/app/**'];
    expect(narrowestGrantPattern('command', both, ['tail', '-n', '5', 'logs/app/a'])).toBe('tail -n * logs/app/**');
    expect(narrowestGrantPattern('command', both, ['tail', '-n', '5', 'logs/db'])).toBe('tail -n * logs/**');
    expect(narrowestGrantPattern('command', both, ['cat', 'logs/db'])).toBeUndefined();
  });

  it('are refused with their place in the file when they cannot compile, or on a rule that cannot be granted', () => {
    const problemsOf = (text: string) => {
      const parsed = parsePolicy(text, 'policy.yaml', { platforms });
      return parsed.ok ? '' : parsed.problems.map(formatPolicyProblem).join('\n');
    };
    expect(
      problemsOf('rules:\n  - tool: run_command\n    outcome: ask\n    grant: { command: "tail a**b" }\n'),
    ).toMatch(/policy\.yaml:4:\d+: .*bad grant pattern "tail a\*\*b" for command/);
    expect(problemsOf('rules:\n  - tool: read_file\n    outcome: allow\n    grant: { path: "logs/**" }\n')).toMatch(
      /policy\.yaml:4:\d+: .*only ask and countersign rules can have grant patterns/,
    );
  });
});

describe('grant offers and coverage', () => {
  const args = { command: ['tail', '-n', '100', 'logs/app/a.log'] };

  it('offer the narrowest pattern and say so; exact arguments otherwise', () => {
    const offer = grantOffer({ name: 'run_command', args }, decide(TAIL, 'run_command', args), OPS, 3600)!;
    expect(offer.args).toEqual({ command: { glob: 'tail -n * logs/app/**' } });
    expect(offer.covers).toContain('command matching `tail -n * logs/app/**`');
    expect(offer.covers).toContain('for 1 hour');
    const plain = decide('version: 1\n', 'write_file', { path: 'a.md', content: 'x' });
    const exact = grantOffer({ name: 'write_file', args: { path: 'a.md', content: 'x' } }, plain, OPS, 86400)!;
    expect(exact.args).toEqual({ path: { eq: 'a.md' }, content: { eq: 'x' } });
    expect(exact.covers).toContain('exactly these arguments');
  });

  it('are not offered for countersign rules unless the policy says so, nor with grants switched off', () => {
    const countersign = `version: 1
rules:
  - tool: run_command
    outcome: countersign
`;
    expect(
      grantOffer({ name: 'run_command', args }, decide(countersign, 'run_command', args), OPS, 3600),
    ).toBeUndefined();
    const granted = `${countersign}    grantable: true\n`;
    expect(grantOffer({ name: 'run_command', args }, decide(granted, 'run_command', args), OPS, 3600)).toBeDefined();
    expect(grantOffer({ name: 'run_command', args }, decide(TAIL, 'run_command', args), OPS, 0)).toBeUndefined();
  });

  it('cover the same tool in the same place with every argument matching, no more and no fewer', () => {
    const offer = grantOffer({ name: 'run_command', args }, decide(TAIL, 'run_command', args), OPS, 3600)!;
    const other = { command: ['tail', '-n', '5', 'logs/app/b.log'] };
    expect(grantCovers(offer, { name: 'run_command', args: other }, OPS)).toBe(true);
    expect(grantCovers(offer, { name: 'run_command', args: { ...other, cwd: '/' } }, OPS)).toBe(false);
    expect(grantCovers(offer, { name: 'run_command', args: {} }, OPS)).toBe(false);
    expect(grantCovers(offer, { name: 'run_other', args: other }, OPS)).toBe(false);
    expect(grantCovers(offer, { name: 'run_command', args: other }, { ...OPS, channel: 'C0GEN0001' })).toBe(false);
    expect(grantCovers(offer, { name: 'run_command', args: other }, { ...OPS, workspace: 'T2' })).toBe(false);
    // A thread of the channel is the channel (Discord threads are channels of their own).
    expect(
      grantCovers(offer, { name: 'run_command', args: other }, { ...OPS, channel: 'TH1', parentChannel: 'C0OPS0001' }),
    ).toBe(true);
  });

  it('stop applying once the policy no longer allows them', () => {
    const decision = decide(TAIL, 'run_command', args);
    const offer = { ...grantOffer({ name: 'run_command', args }, decision, OPS, 3600)!, rule: ruleName(decision.rule) };
    expect(policyStillAllows(offer, decide(TAIL, 'run_command', args))).toBe(true);
    const narrower = TAIL.replace(', "tail -n * logs/app/**"', '');
    expect(policyStillAllows(offer, decide(narrower, 'run_command', args))).toBe(false);
    const notGrantable = `${TAIL.replace(/ {4}grant:\n.*\n/, '')}    grantable: false\n`;
    expect(policyStillAllows(offer, decide(notGrantable, 'run_command', args))).toBe(false);
    const denied = TAIL.replace('outcome: ask', 'outcome: deny').replace(/ {4}grant:\n.*\n/, '');
    expect(policyStillAllows(offer, decide(denied, 'run_command', args))).toBe(false);
  });
});
