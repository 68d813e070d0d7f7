import { describe, expect, it } from 'vitest';
import { formatPolicyProblem, parsePolicy } from '../../src/policy/index.ts';
import { platforms } from './helpers.ts';

function parse(text: string) {
  return parsePolicy(text, 'policy.yaml', { platforms, approvers: [] });
}

function problems(text: string): string[] {
  const parsed = parse(text);
  return parsed.ok ? [] : parsed.problems.map(formatPolicyProblem);
}

const GOOD = `groups:
  oncall: [slack:U0ONCALL1]
budgets:
  - name: ops-daily
    for: { channel: slack:C0OPS0001 }
    usd: 20
    per: day
    warn_at: 0.8
  - name: ann
    for: { person: slack:U0ANN0001 }
    tokens: 2000000
    per: month
    tz: Europe/Berlin
  - name: oncall
    for: { group: oncall }
    usd: 5
    per: day
  - name: acme
    for: { workspace: slack:T0ACME001 }
    usd: 100
    per: month
  - name: all
    for: { everyone: true }
    usd: 500
    per: month
rules: []
`;

const where = (channel: string, parentChannel?: string) => ({
  platform: 'slack',
  workspace: 'T0ACME001',
  channel,
  ...(parentChannel ? { parentChannel } : {}),
  dm: false,
});
const person = (user: string) => ({ platform: 'slack', workspace: 'T0ACME001', user });

describe('the budgets section of a policy', () => {
  it('reads every kind of budget with its defaults', () => {
    const parsed = parse(GOOD);
    if (!parsed.ok) throw new Error(parsed.problems.map(formatPolicyProblem).join('\n'));
    const [ops, ann] = parsed.policy.budgets;
    expect(ops).toMatchObject({ name: 'ops-daily', unit: 'usd', limit: 20, per: 'day', tz: 'UTC', warnAt: 0.8 });
    expect(ops!.source).toBe('policy.yaml:4');
    expect(ann).toMatchObject({ unit: 'tokens', limit: 2_000_000, per: 'month', tz: 'Europe/Berlin' });
  });

  it('applies the channel, person, group, workspace and everyone budgets to the calls they cover', () => {
    const parsed = parse(GOOD);
    if (!parsed.ok) throw new Error('invalid');
    const names = (user: string, channel: string, parent?: string) =>
      parsed.policy.budgetsFor(person(user), where(channel, parent)).map((b) => b.name);
    expect(names('U0ANN0001', 'C0OPS0001')).toEqual(['ops-daily', 'ann', 'acme', 'all']);
    expect(names('U0ONCALL1', 'C0DEV0001')).toEqual(['oncall', 'acme', 'all']);
    // A thread counts against its channel's budget.
    expect(names('U0BOB0001', 'C0THREAD1', 'C0OPS0001')).toEqual(['ops-daily', 'acme', 'all']);
    expect(
      parsed.policy
        .budgetsFor(person('U0BOB0001'), { platform: 'slack', workspace: 'T0OTHER01', channel: 'C1', dm: false })
        .map((b) => b.name),
    ).toEqual(['all']);
  });

  it('reports each mistake at its line', () => {
    const found = problems(`budgets:
  - name: a
    for: { channel: slack:C0OPS0001, person: slack:U0ANN0001 }
    usd: 20
    per: week
  - name: a
    for: { group: nobody }
    usd: 1
    tokens: 5
    per: day
    tz: Mars/Olympus
    warn_at: 1.5
`);
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^policy\.yaml:3:\d+: budgets\[0\]\.for: give exactly one of person, group/),
        expect.stringMatching(/^policy\.yaml:5:\d+: budgets\[0\]\.per: expected day or month/),
        expect.stringMatching(/^policy\.yaml:6:\d+: .*give the limit as exactly one of usd or tokens/),
        expect.stringMatching(/^policy\.yaml:11:\d+: budgets\[1\]\.tz: "Mars\/Olympus" is not a time zone/),
        expect.stringMatching(/^policy\.yaml:12:\d+: budgets\[1\]\.warn_at: expected at most 1/),
      ]),
    );
  });

  it('reads the allowance an approver may grant, a quarter of the limit unless set', () => {
    const parsed = parse(`budgets:
  - name: set-usd
    for: { everyone: true }
    usd: 20
    per: day
    allowance_usd: 7.5
  - name: set-tokens
    for: { everyone: true }
    tokens: 1000
    per: day
    allowance_tokens: 300
  - name: default
    for: { everyone: true }
    usd: 10.1
    per: day
rules: []
`);
    if (!parsed.ok) throw new Error(parsed.problems.map(formatPolicyProblem).join('\n'));
    expect(parsed.policy.budgets.map((b) => [b.name, b.allowance])).toEqual([
      ['set-usd', 7.5],
      ['set-tokens', 300],
      ['default', 2.53],
    ]);
  });

  it('reports an allowance in the wrong unit or of no amount at its line', () => {
    const found = problems(`budgets:
  - name: a
    for: { everyone: true }
    usd: 20
    per: day
    allowance_tokens: 500
  - name: b
    for: { everyone: true }
    tokens: 1000
    per: day
    allowance_usd: 5
  - name: c
    for: { everyone: true }
    usd: 1
    per: day
    allowance_usd: -1
`);
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^policy\.yaml:6:\d+: budgets\[0\]\.allowance_tokens: the limit is in usd: use allowance_usd/,
        ),
        expect.stringMatching(
          /^policy\.yaml:11:\d+: budgets\[1\]\.allowance_usd: the limit is in tokens: use allowance_tokens/,
        ),
        expect.stringMatching(/^policy\.yaml:16:\d+: budgets\[2\]\.allowance_usd: expected more than 0/),
      ]),
    );
  });

  it('refuses a repeated name and an unknown group', () => {
    const found = problems(`budgets:
  - name: a
    for: { everyone: true }
    usd: 1
    per: day
  - name: a
    for: { group: nobody }
    usd: 1
    per: day
`);
    expect(found).toEqual([
      expect.stringMatching(/^policy\.yaml:6:\d+: budgets\[1\]\.name: another budget is already named "a"/),
      expect.stringMatching(/^policy\.yaml:7:\d+: budgets\[1\]\.for\.group(\[0\])?: unknown group "nobody"/),
    ]);
  });
});
