import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/approval/canonical-json.ts';
import { newNonce, planHash } from '../../src/approval/envelope.ts';
import { ButtonPayload, buttonValue } from '../../src/core/buttons.ts';

describe('canonical JSON', () => {
  it('sorts keys at every depth and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('gives the same plan hash to the same calls however their keys were ordered', () => {
    const one = canonicalJson([{ id: 'c1', name: 'deploy', args: { env: 'prod', service: 'api' } }]);
    const two = canonicalJson([{ args: { service: 'api', env: 'prod' }, name: 'deploy', id: 'c1' }]);
    expect(planHash(one)).toBe(planHash(two));
    expect(planHash(one)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses values JSON cannot carry exactly', () => {
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(/NaN/);
  });
});

describe('approval buttons', () => {
  it('carry a 192-bit URL-safe nonce and a decision within Discord’s 100-character custom_id', () => {
    const nonce = newNonce();
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{32}$/);
    for (const decision of ['A', 'D', 'a0', 'd12', 'o3']) {
      const value = buttonValue(nonce, decision);
      expect(value.length).toBeLessThanOrEqual(100);
      expect(ButtonPayload.parse(value)).toEqual({ nonce, decision });
    }
  });

  it.each([
    ['', 'empty'],
    ['short.A', 'short nonce'],
    [`${'a'.repeat(32)}.X`, 'unknown decision'],
    [`${'a'.repeat(32)}.A.extra`, 'extra part'],
    [`${'a'.repeat(31)}!.A`, 'character outside base64url'],
    [`${'a'.repeat(32)}.a100`, 'call index too large'],
    ['x'.repeat(101), 'too long'],
  ])('rejects a forged payload: %s (%s)', (value) => {
    expect(ButtonPayload.safeParse(value).success).toBe(false);
  });
});
