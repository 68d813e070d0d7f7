import { describe, expect, it } from 'vitest';
import { formatPolicyProblem, parsePolicy } from '../../src/policy/index.ts';
import { platforms } from './helpers.ts';

/** `file:line:column` of `token` on line `line` of `text` (1-based), as a problem should report it. */
function at(file: string, text: string, line: number, token: string): string {
  const column = text.split('\n')[line - 1]!.indexOf(token) + 1;
  if (column === 0) throw new Error(`"${token}" is not on line ${line}`);
  return `${file}:${line}:${column}:`;
}

function problems(text: string, file = 'policy.yaml', approvers: string[] = []): string[] {
  const parsed = parsePolicy(text, file, { platforms, approvers });
  return parsed.ok ? [] : parsed.problems.map(formatPolicyProblem);
}

const MALFORMED_YAML = `rules:
  - name: one
    tool: run_command
    outcome: alow
    colour: red
  - tool: "deploy__{a,b"
    outcome: allow
  - tool: write_file
    paths: /etc/**
    outcome: ask
    approvers: [U123, "slack:u123", "slack: U123"]
  - tool: current_time
`;

describe('a malformed YAML policy', () => {
  const found = problems(MALFORMED_YAML);

  it('reports every problem, not just the first', () => {
    expect(found).toHaveLength(8);
  });

  it('points at a bad outcome', () => {
    expect(found).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^${at('policy.yaml', MALFORMED_YAML, 4, 'alow')} rules\\[0\\]\\.outcome: expected one of allow, ask, countersign, deny`,
        ),
      ),
    );
  });

  it('refuses an unknown key, at the key', () => {
    expect(found).toContain(
      `${at('policy.yaml', MALFORMED_YAML, 5, 'colour')} rules[0].colour: unknown key (check its spelling)`,
    );
  });

  it('refuses a bad glob', () => {
    expect(found.find((p) => p.includes('bad glob "deploy__{a,b"'))).toMatch(
      new RegExp(`^${at('policy.yaml', MALFORMED_YAML, 6, '"deploy')}`),
    );
    expect(found.find((p) => p.includes('/etc/**'))).toMatch(
      new RegExp(`^${at('policy.yaml', MALFORMED_YAML, 9, '/etc')}.*drop the leading "/"`),
    );
  });

  it('refuses person ids that would match nobody, each where it is', () => {
    expect(found.find((p) => p.includes('"U123"'))).toMatch(
      new RegExp(`^${at('policy.yaml', MALFORMED_YAML, 11, 'U123')}`),
    );
    expect(found.find((p) => p.includes('upper-case'))).toMatch(
      new RegExp(`^${at('policy.yaml', MALFORMED_YAML, 11, '"slack:u123"')}`),
    );
    expect(found.find((p) => p.includes('contains a space'))).toMatch(
      new RegExp(`^${at('policy.yaml', MALFORMED_YAML, 11, '"slack: U123"')}`),
    );
  });

  it('names a missing outcome at its rule', () => {
    expect(found).toContain(
      `${at('policy.yaml', MALFORMED_YAML, 12, 'tool')} rules[3]: "outcome" is missing (allow, ask, countersign or deny)`,
    );
  });
});

const MALFORMED_JSON = `{
  "groups": { "sre": ["slack:U0SRE0001"] },
  "rules": [
    { "tool": "run_command", "outcome": "sometimes" },
    { "tool": "x", "outcome": "allow", "extra": 1 },
    { "tool": "y", "outcome": "ask", "approvers": ["sre", "oncal"] }
  ]
}`;

describe('a malformed JSON policy', () => {
  const found = problems(MALFORMED_JSON, 'policy.json');

  it('reports each problem with its line and column', () => {
    expect(found).toEqual([
      expect.stringMatching(
        new RegExp(`^${at('policy.json', MALFORMED_JSON, 4, '"sometimes"')} rules\\[0\\]\\.outcome`),
      ),
      `${at('policy.json', MALFORMED_JSON, 5, '"extra"')} rules[1].extra: unknown key (check its spelling)`,
    ]);
  });

  it('names an unknown group once the shape is right', () => {
    const fixed = MALFORMED_JSON.replace('"sometimes"', '"deny"').replace(', "extra": 1', '');
    expect(problems(fixed, 'policy.json')).toEqual([
      expect.stringMatching(
        new RegExp(`^${at('policy.json', fixed, 6, '"oncal"')} rules\\[2\\]\\.approvers\\[1\\]: unknown group "oncal"`),
      ),
    ]);
  });
});

describe('policy checks beyond the shape', () => {
  it('reports a YAML syntax error with its line', () => {
    expect(problems('rules:\n  - tool: a\n    outcome: [allow\n')[0]).toMatch(/^policy\.yaml:\d+:\d+: /);
  });

  it('refuses a duplicate key', () => {
    expect(problems('rules: []\nrules: []\n')[0]).toMatch(/^policy\.yaml:\d+:\d+: Map keys must be unique/);
  });

  it('refuses a countersign rule nobody could countersign', () => {
    expect(problems('rules:\n  - tool: run_command\n    outcome: countersign\n')).toEqual([
      expect.stringMatching(/^policy\.yaml:3:14: rules\[0\]\.outcome: countersign needs someone to countersign/),
    ]);
  });

  it('accepts the same rule once APPROVERS names someone', () => {
    expect(
      problems('rules:\n  - tool: run_command\n    outcome: countersign\n', 'policy.yaml', ['slack:U0SRE0001']),
    ).toEqual([]);
  });

  it('refuses two rules of the same name and a group that includes itself', () => {
    const found = problems(
      'groups:\n  a: [b]\n  b: [a]\nrules:\n  - name: x\n    tool: a\n    outcome: allow\n  - name: x\n    tool: b\n    outcome: allow\n',
    );
    expect(found.some((p) => p.includes('includes itself'))).toBe(true);
    expect(found).toContainEqual(
      expect.stringMatching(/^policy\.yaml:8:11: rules\[1\]\.name: another rule is already named "x"/),
    );
  });

  it('refuses a channel written by name', () => {
    expect(problems('rules:\n  - tool: a\n    where: { channels: ["#ops"] }\n    outcome: deny\n')[0]).toMatch(
      /write the channel's id/,
    );
  });

  it('refuses an empty file with a hint', () => {
    expect(problems('')[0]).toMatch(/^policy\.yaml:1:1: the policy file is empty/);
  });
});
