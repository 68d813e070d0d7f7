import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { admitArgs, defineTool } from '../../src/agent/tools/tool.ts';
import { parsePolicy, type Policy, type ToolDescriptor } from '../../src/policy/index.ts';
import { people, places, platforms } from './helpers.ts';

/**
 * `args:` conditions compare values as the tool receives them: JSON carries every call's arguments
 * to its tool (an MCP server, a stored call resumed after a card), so `-0` arrives as `0`. The
 * policy must decide on those values, not on the ones the model wrote.
 */

const SCALE: ToolDescriptor = { name: 'k8s__scale', kind: 'mcp', mcp: { server: 'k8s', trusted: true } };

function policyOf(yaml: string): Policy {
  const parsed = parsePolicy(`version: 1\napprovers: [slack:U0SRE0001]\nrules:\n${yaml}`, 'policy.yaml', { platforms });
  if (!parsed.ok) throw new Error(parsed.problems.map((p) => p.message).join('\n'));
  return parsed.policy;
}

const decide = (policy: Policy, args: unknown) =>
  policy.decide({ tool: SCALE, args, where: places.ops, requester: people.dev });

const REPRO = policyOf(`  - name: never-zero
    tool: k8s__scale
    args: { replicas: 0 }
    outcome: deny
  - name: to-one
    tool: k8s__scale
    args: { replicas: 1 }
    outcome: countersign
  - name: scale
    tool: k8s__scale
    outcome: allow
`);

describe('args: values as the tool receives them', () => {
  it('a deny rule on 0 denies -0, which the tool would receive as 0', () => {
    expect(decide(REPRO, { replicas: -0 })).toMatchObject({ outcome: 'deny', rule: { name: 'never-zero' } });
  });

  it('a countersign rule on 0 asks for a countersignature for -0', () => {
    const policy = policyOf(`  - name: zero-needs-two
    tool: k8s__scale
    args: { replicas: 0 }
    outcome: countersign
  - { tool: k8s__scale, outcome: ask }
`);
    expect(decide(policy, { replicas: -0 })).toMatchObject({
      outcome: 'countersign',
      rule: { name: 'zero-needs-two' },
    });
  });

  it('a rule written -0 holds the 0 the tool receives', () => {
    const policy = policyOf(`  - { name: minus-zero, tool: k8s__scale, args: { replicas: -0 }, outcome: deny }\n`);
    expect(decide(policy, { replicas: 0 }).outcome).toBe('deny');
  });

  it('a rule that tightens also holds a number, true or false written as a string, and other forms of a string', () => {
    const policy = policyOf(`  - { name: zero, tool: k8s__scale, args: { replicas: 0 }, outcome: deny }
  - { name: forced, tool: k8s__scale, args: { force: true }, outcome: deny }
  - { name: cafe, tool: k8s__scale, args: { namespace: "caf\\u00e9" }, outcome: countersign }
  - { name: secrets, tool: k8s__scale, args: { namespace: secrets }, outcome: deny }
  - { name: quoted-two, tool: k8s__scale, args: { replicas: "2" }, outcome: countersign }
  - { name: scale, tool: k8s__scale, outcome: allow }
`);
    for (const replicas of ['0', ' 0', '-0', '0.0', '0e5', '\uff10'])
      expect(decide(policy, { replicas }).rule.name).toBe('zero');
    for (const force of ['true', 'True', ' TRUE ']) expect(decide(policy, { force }).rule.name).toBe('forced');
    for (const namespace of ['cafe\u0301', 'CAF\u00c9', ' caf\u00e9'])
      expect(decide(policy, { namespace }).rule.name).toBe('cafe');
    for (const namespace of ['Secrets', ' SECRETS ', '\uff53ecrets'])
      expect(decide(policy, { namespace }).rule.name).toBe('secrets');
    expect(decide(policy, { replicas: 2 }).rule.name).toBe('quoted-two');
    // What no lenient reader takes for the value stays outside the rule.
    for (const replicas of ['', ' ', 'zero', [0], { n: 0 }, null, false])
      expect(decide(policy, { replicas }).rule.name).toBe('scale');
    expect(decide(policy, { namespace: 'secrets-2' }).rule.name).toBe('scale');
  });

  it('a rule that loosens holds only the value itself', () => {
    const policy = policyOf(`  - { name: one-is-fine, tool: k8s__scale, args: { replicas: 1 }, outcome: allow }\n`);
    expect(decide(policy, { replicas: 1 }).outcome).toBe('allow');
    for (const replicas of ['1', '1e0', '\uff11', true])
      expect(decide(policy, { replicas }).rule.name).not.toBe('one-is-fine');
  });

  it('an ask rule before an allow rule holds the lenient forms too: a lenient reading never loosens', () => {
    const policy = policyOf(`  - { name: zero-asks, tool: k8s__scale, args: { replicas: 0 }, outcome: ask }
  - { name: prod-asks, tool: k8s__scale, args: { namespace: prod }, outcome: ask }
  - { name: scale, tool: k8s__scale, outcome: allow }
`);
    for (const replicas of [0, '0', ' 0', '\uff10']) expect(decide(policy, { replicas }).rule.name).toBe('zero-asks');
    expect(decide(policy, { namespace: 'PROD' }).rule.name).toBe('prod-asks');
    // Where the ask rule loosens (the built-in rule would want a countersignature), the lenient
    // reading does not take it: `Secrets` is not `secrets` to a tool that tells them apart.
    const loosening = policyOf(`  - { name: dev-asks, tool: k8s__scale, args: { namespace: dev }, outcome: ask }\n`);
    expect(decide(loosening, { namespace: 'dev' }).rule.name).toBe('dev-asks');
    expect(decide(loosening, { namespace: 'DEV' })).toMatchObject({
      outcome: 'countersign',
      rule: { source: 'built-in' },
    });
  });

  it('admission hands on the values as JSON carries them', () => {
    const tool = defineTool({
      name: 'k8s__scale',
      description: 'scale (test)',
      version: '1',
      input: z.record(z.string(), z.unknown()),
      approval: 'always',
      risk: 'medium',
      idempotent: false,
      execute: async () => 'ok',
    });
    const admitted = admitArgs(tool, { replicas: -0, big: Number.POSITIVE_INFINITY, list: [-0, 1] });
    expect(admitted).toEqual({ ok: true, args: { replicas: 0, big: null, list: [0, 1] } });
    if (!admitted.ok) return;
    expect(Object.is(admitted.args.replicas, -0)).toBe(false);
  });
});

/** mulberry32: a small seeded PRNG, so a failing case is the same on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Values a policy file can hold (YAML), written as YAML. */
const RULE_VALUES: Array<[unknown, string]> = [
  [0, '0'],
  [-0, '-0'],
  [1, '1'],
  [1, '1e0'],
  [2, '2.0'],
  ['0', '"0"'],
  ['1', '"1"'],
  [true, 'true'],
  [false, 'false'],
  ['true', '"true"'],
  [null, 'null'],
  ['prod', 'prod'],
  ['Prod', 'Prod'],
  ['caf\u00e9', '"caf\\u00e9"'],
  ['cafe\u0301', '"cafe\\u0301"'],
  // Past 2^53 a double holds the nearest even number: the policy file and the model's JSON agree on it.
  [2 ** 53, '9007199254740993'],
];
/** Values a model's JSON can hold once parsed: -0 and 1e400 (Infinity) included. */
const SENT_VALUES: unknown[] = [
  ...RULE_VALUES.map(([v]) => v),
  -0,
  JSON.parse('1e400') as number,
  JSON.parse('-0.0') as number,
  ' 0',
  '',
  [0],
  [-0, 'prod'],
  { replicas: -0 },
];
const KEYS = ['replicas', 'namespace', 'force'];
const OUTCOMES = ['allow', 'ask', 'countersign', 'deny'] as const;

const pick = <T>(random: () => number, list: readonly T[]): T => list[Math.floor(random() * list.length)]!;

function randomPolicy(random: () => number, index: number): Policy {
  const rules: string[] = [];
  const count = 1 + Math.floor(random() * 4);
  for (let r = 0; r < count; r++) {
    const keys = KEYS.filter(() => random() < 0.5);
    const args = keys.map((key) => {
      const values = Array.from({ length: 1 + Math.floor(random() * 2) }, () => pick(random, RULE_VALUES)[1]);
      return `${key}: [${values.join(', ')}]`;
    });
    const condition = args.length > 0 ? `, args: { ${args.join(', ')} }` : '';
    rules.push(`  - { name: r${index}-${r}, tool: k8s__scale${condition}, outcome: ${pick(random, OUTCOMES)} }`);
  }
  return policyOf(`${rules.join('\n')}\n`);
}

function randomArgs(random: () => number): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const key of KEYS) if (random() < 0.7) args[key] = pick(random, SENT_VALUES);
  return args;
}

const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe('the decision on the card is the decision on what the tool receives (seeded property test)', () => {
  const tool = defineTool({
    name: 'k8s__scale',
    description: 'scale (test)',
    version: '1',
    input: z.record(z.string(), z.unknown()),
    approval: 'always',
    risk: 'medium',
    idempotent: false,
    execute: async () => 'ok',
  });

  it('holds for 400 random policies, each with 10 random arguments', () => {
    const random = prng(47);
    for (let p = 0; p < 400; p++) {
      // Parsing a policy costs far more than deciding: each one decides ten calls.
      const policy = randomPolicy(random, p);
      for (let c = 0; c < 10; c++) {
        const sent = randomArgs(random);
        const admitted = admitArgs(tool, sent);
        if (!admitted.ok) throw new Error(admitted.problem);
        const received = roundTrip(admitted.args);
        const onCard = decide(policy, admitted.args);
        const onReceived = decide(policy, received);
        const context = `policy ${p}, call ${c}: ${JSON.stringify(sent)}`;
        // toEqual tells -0 from 0 (Object.is on primitives): the tool gets exactly what was decided on.
        expect(admitted.args, context).toEqual(received);
        expect([onCard.outcome, onCard.rule.name], context).toEqual([onReceived.outcome, onReceived.rule.name]);
        // The engine alone agrees too, for every value JSON carries unchanged but for the sign of 0.
        const infinite = JSON.stringify(sent, (_, v: unknown) => (v === Number.POSITIVE_INFINITY ? '∞' : v));
        if (!infinite.includes('∞')) {
          const onSent = decide(policy, sent);
          expect([onSent.outcome, onSent.rule.name], context).toEqual([onReceived.outcome, onReceived.rule.name]);
        }
      }
    }
  });

  it('tells -0 from 0 when comparing (a check on the check)', () => {
    expect({ a: -0 }).not.toEqual({ a: 0 });
  });
});
