/**
 * The plan hash is sha256 of the canonical JSON of the planned calls, and the scope hash of the
 * scope; both are stored with every pending envelope and compared again when the click resumes the
 * turn. Canonical JSON is RFC 8785's `canonicalize` now; it replaced a hand-written encoder, kept
 * below as the reference, and must give the same bytes for every value an envelope can hold, or a
 * deploy would refuse the envelopes pending across it.
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/approval/canonical-json.ts';
import { planHash, scopeHash } from '../../src/approval/envelope.ts';

/** The encoder the stored hashes were made with (src/approval/canonical-json.ts until #32). */
function referenceCanonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('Canonical JSON has no representation for NaN or Infinity');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    return `[${value.map((v) => (v === undefined ? 'null' : referenceCanonicalJson(v))).join(',')}]`;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${referenceCanonicalJson(v)}`).join(',')}}`;
  }
  throw new TypeError(`Canonical JSON cannot encode a ${typeof value}`);
}

const NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.1,
  0.2 + 0.3,
  1 / 3,
  1e21,
  1e-7,
  1e-6,
  123456789012345680000,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 63),
  Number.MAX_SAFE_INTEGER,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  5e-324,
  4.35,
  1.7976931348623157e308,
  333333333.3333333,
];
const STRINGS = [
  '',
  'plain',
  'quote " backslash \\ slash /',
  '\u0000\u0001\u001f\u007f\b\f\n\r\t',
  '\u2028\u2029',
  'é (precomposed) vs é (combining)',
  '😀 astral 𝄞',
  '\uFEFF byte order mark',
  '<script>&amp;</script>',
  'ｆｕｌｌ　ｗｉｄｔｈ',
  'עברית العربية',
];
/** Keys whose order differs between UTF-16 code units and code points, and by case and accents. */
const KEYS = ['', 'a', 'B', 'b', '_', '10', '9', 'é', 'é', 'z', '😀', '\uFFFF', '\uE000', '𝄞', 'a b', '\u0000'];

/** Values of the shapes tool arguments take: JSON text parsed, so no undefined, NaN or functions. */
function* corpus(): Generator<unknown> {
  yield* NUMBERS;
  yield* STRINGS;
  yield* [null, true, false, [], {}, [[]], [{}], { a: [] }, { a: {} }];
  yield Object.fromEntries(KEYS.map((k, i) => [k, i]));
  yield Object.fromEntries([...KEYS].reverse().map((k, i) => [k, STRINGS[i % STRINGS.length]]));
  yield { nested: { deeper: { deepest: [1, { z: 0, a: [0.1, -0, 1e21] }] } }, list: NUMBERS, text: STRINGS };
  yield JSON.parse('{"b":1,"a":2,"c":{"y":"\\u00e9","x":"\\ud83d\\ude00"},"d":[1.0,1e2,-0.0,1E-7]}');
  let seed = 32;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const value = (depth: number): unknown => {
    const roll = random();
    if (depth > 3 || roll < 0.4) return pick<unknown>([...NUMBERS, ...STRINGS, null, true, false]);
    if (roll < 0.7) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
    return Object.fromEntries(Array.from({ length: Math.floor(random() * 5) }, () => [pick(KEYS), value(depth + 1)]));
  };
  for (let i = 0; i < 2000; i++) yield JSON.parse(JSON.stringify(value(0)));
}

describe('canonical JSON (RFC 8785) against the encoder the stored hashes were made with', () => {
  it('writes the same bytes for every JSON value of the corpus', () => {
    let compared = 0;
    for (const value of corpus()) {
      expect(canonicalJson(value)).toBe(referenceCanonicalJson(value));
      compared++;
    }
    expect(compared).toBeGreaterThan(2000);
  });

  it('drops undefined members and writes undefined array entries as null, as before', () => {
    const value = { keep: 1, gone: undefined, list: [undefined, 2] };
    expect(canonicalJson(value)).toBe('{"keep":1,"list":[null,2]}');
    expect(canonicalJson(value)).toBe(referenceCanonicalJson(value));
  });

  it('keeps the plan hash of a stored envelope: the RFC 8785 test vector and a plan hashed before the change', () => {
    // RFC 8785 appendix B's number sample and section 3.2.3's sorting sample.
    expect(canonicalJson([333333333.3333333, 1e30, 4.5, 0.002, 1e-27])).toBe(
      '[333333333.3333333,1e+30,4.5,0.002,1e-27]',
    );
    expect(
      canonicalJson({
        '\u20ac': 'Euro Sign',
        '\r': 'Carriage Return',
        '\ufb33': 'Hebrew Letter Dalet With Dagesh',
        '1': 'One',
        '\ud83d\ude00': 'Emoji: Grinning Face',
        '\u0080': 'Control',
        '\u00f6': 'Latin Small Letter O With Diaeresis',
      }),
    ).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
    const calls = [{ id: 'c1', name: 'write_file', args: { path: 'notes/é😀.txt', content: 'hi\n', mode: 420 } }];
    // Hashes the hand-written encoder gave these values, computed before the switch.
    expect(planHash(canonicalJson(calls))).toBe('fe63be818431f99804cb2599343b6c4085efe3a6282badf861e838e55280127c');
    const scope = {
      agent: 'Countersign',
      workspaceRoot: '/w',
      tools: [{ name: 'write_file', version: '1' }],
      skills: 'x',
    };
    expect(scopeHash(scope)).toBe('d5ed2b21ad7e39112a40d604e0befbc7ab4f14401aedac135421ecbd0e0c641c');
  });

  it('refuses what JSON cannot carry exactly: NaN, Infinity, a lone surrogate, a bare undefined', () => {
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(/NaN/);
    expect(() => canonicalJson([Number.POSITIVE_INFINITY])).toThrow(/Infinity/);
    // Postgres' jsonb refuses "\ud800" too, so no stored turn or envelope can hold one.
    expect(() => canonicalJson({ path: 'a\ud800b' })).toThrow(/surrogate/);
    expect(() => canonicalJson(undefined)).toThrow(TypeError);
  });
});
