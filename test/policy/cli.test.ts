import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { policyCommand } from '../../src/policy/index.ts';
import { builtinToolKinds as toolKinds, OPS_TEAM, platforms } from './helpers.ts';

const options = { platforms };

const check = (...args: string[]) => policyCommand(['check', '--policy', OPS_TEAM, ...args], { options, toolKinds });

describe('countersign policy check', () => {
  it('prints the outcome and the rule that decided it', () => {
    const result = check(
      '--as',
      'slack:T0OPS0001:U0SRE0001',
      '--where',
      'C0OPS0001',
      '--tool',
      'run_command',
      '--args',
      '{"command":["kubectl","get","pods"]}',
    );
    expect(result.exitCode).toBe(0);
    expect(result.lines[0]).toBe('outcome: allow');
    expect(result.lines[1]).toMatch(/^rule: kubectl-read \(.*ops-team\.yaml:\d+\)$/);
  });

  it('names who may countersign', () => {
    const result = check(
      '--as',
      'slack:T0OPS0001:U0SRE0001',
      '--tool',
      'run_command',
      '--args',
      '{"command":"kubectl delete pod x"}',
    );
    expect(result.lines).toContain('outcome: countersign');
    expect(result.lines).toContain(
      'approvers: slack-usergroup:S0ONCALL1, discord:333333333333333333 (not the requester)',
    );
  });

  it('prints the refusal for someone who may not use the bot', () => {
    const result = check('--as', 'slack:T0OTHER01:U0SRE0001', '--tool', 'read_file');
    expect(result.lines[0]).toBe('may use: no');
  });

  it('uses the built-in policy without a file', () => {
    const result = policyCommand(['check', '--as', 'discord:1:2', '--tool', 'github__create_issue'], { options });
    expect(result.lines.slice(0, 2)).toEqual(['outcome: ask', 'rule: default:mcp-unannotated (built-in)']);
  });

  it('asks --policy FILE over POLICY_FILE', () => {
    const args = ['check', '--as', 'slack:T0OPS0001:U0SRE0001', '--tool', 'run_command'];
    const kubectl = ['--args', '{"command":["kubectl","get","pods"]}'];
    expect(policyCommand([...args, ...kubectl], { options, toolKinds }).lines[1]).toBe('rule: default:exec (built-in)');
    const result = policyCommand([...args, ...kubectl, '--policy', OPS_TEAM], {
      file: 'no-such-policy.yaml',
      options,
      toolKinds,
    });
    expect(result.lines[1]).toMatch(/^rule: kubectl-read \(.*ops-team\.yaml:27\)$/);
  });

  it('asks for a full person id', () => {
    expect(check('--as', 'slack:U0SRE0001', '--tool', 'read_file').exitCode).toBe(2);
  });
});

describe('countersign policy lint', () => {
  it('passes the ops-team example', () => {
    expect(policyCommand(['lint', OPS_TEAM], { options })).toEqual({ lines: [`${OPS_TEAM}: ok`], exitCode: 0 });
  });

  it('prints every problem as file:line:column and exits 1', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'policy-lint-'));
    const file = path.join(dir, 'bad.yaml');
    await writeFile(file, 'rules:\n  - tool: a\n    outcome: maybe\n    approvers: [U123]\n');
    try {
      const result = policyCommand(['lint', file], { options });
      expect(result.exitCode).toBe(1);
      expect(result.lines).toEqual([
        expect.stringMatching(new RegExp(`^${file}:3:14: `)),
        expect.stringMatching(new RegExp(`^${file}:4:17: `)),
        '2 problems',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('countersign policy without a command', () => {
  it('is a wrong invocation: usage and exit code 2', () => {
    const result = policyCommand([], { options });
    expect(result.exitCode).toBe(2);
    expect(result.lines[0]).toBe('Usage: countersign policy <command>');
  });

  it('names an unknown command', () => {
    expect(policyCommand(['lnt'], { options })).toMatchObject({
      exitCode: 2,
      lines: expect.arrayContaining(['Unknown policy command "lnt".']),
    });
  });

  it('prints its usage with exit code 0 when asked for help, with lint taking an optional FILE', () => {
    const result = policyCommand(['help'], { options });
    expect(result.exitCode).toBe(0);
    expect(result.lines).toContainEqual(expect.stringMatching(/^ {2}lint \[FILE\] .*default: POLICY_FILE/));
    expect(result.lines).toContainEqual(expect.stringContaining('[--policy FILE]'));
  });

  it('lints POLICY_FILE when lint is given no FILE, and says what it needs without either', () => {
    expect(policyCommand(['lint'], { file: OPS_TEAM, options })).toEqual({ lines: [`${OPS_TEAM}: ok`], exitCode: 0 });
    expect(policyCommand(['lint'], { options })).toMatchObject({ exitCode: 2 });
  });
});

describe('docs/policy.md', () => {
  it('shows the ops-team example exactly as tested', async () => {
    const docs = await readFile(path.resolve(import.meta.dirname, '../../docs/policy.md'), 'utf8');
    const block = /<!-- docs-check: file policy\.yaml -->\s*```yaml\n([\s\S]*?)```/.exec(docs)?.[1];
    expect(parse(block ?? '')).toEqual(parse(await readFile(OPS_TEAM, 'utf8')));
  });
});
