/**
 * The policy's globs run on RE2 (re2js). These tests hold the documented glob semantics
 * (docs/policy.md, "Globs") against an independent, deliberately naive matcher written here, and
 * check the crafted shapes that made the backtracking engine (and picomatch) take seconds. Only
 * correctness is asserted, within the default test timeout: `*a*a*a*b` against 1,000 characters
 * took 25 s before the change.
 */
import { describe, expect, it } from 'vitest';
import {
  compileNameGlob,
  compilePathGlob,
  compileWordGlob,
  GlobError,
  normaliseWorkspacePath,
} from '../../src/policy/glob.ts';

/** `{a,b}` expanded to every alternative, nested braces too. */
function expandBraces(glob: string): string[] {
  const open = glob.indexOf('{');
  if (open < 0) return [glob];
  let depth = 0;
  const cuts: number[] = [];
  let close = -1;
  for (let i = open; i < glob.length && close < 0; i++) {
    if (glob[i] === '{') depth++;
    else if (glob[i] === '}' && --depth === 0) close = i;
    else if (glob[i] === ',' && depth === 1) cuts.push(i);
  }
  const bounds = [open, ...cuts, close];
  const options = bounds.slice(1).map((end, k) => glob.slice(bounds[k]! + 1, end));
  return options.flatMap((option) => expandBraces(glob.slice(0, open) + option + glob.slice(close + 1)));
}

/** One glob (no braces) against a text, by trying every way: fine for the short texts below. */
function naiveMatch(glob: string, text: string, fold: boolean): boolean {
  const same = (a: string, b: string) => (fold ? a.toLowerCase() === b.toLowerCase() : a === b);
  const at = (g: number, t: number): boolean => {
    if (g === glob.length) return t === text.length;
    const wholeSegment = (g === 0 || glob[g - 1] === '/') && glob.startsWith('**', g);
    if (wholeSegment && g + 2 === glob.length) return true;
    if (wholeSegment && glob[g + 2] === '/') {
      if (at(g + 3, t)) return true;
      for (let k = t; k < text.length; k++) if (text[k] === '/' && at(g + 3, k + 1)) return true;
      return false;
    }
    const c = glob[g]!;
    if (c === '*') {
      for (let k = t; k <= text.length; k++) {
        if (at(g + 1, k)) return true;
        if (text[k] === '/') return false;
      }
      return false;
    }
    if (t === text.length) return false;
    if (c === '?') return text[t] !== '/' && at(g + 1, t + 1);
    if (c === '[') {
      const end = glob.indexOf(']', g + 2);
      let body = glob.slice(g + 1, end);
      const negated = body.startsWith('!');
      if (negated) body = body.slice(1);
      let inClass = false;
      for (let k = 0; k < body.length; k++) {
        if (body[k + 1] === '-' && k + 2 < body.length) {
          const [lo, hi, ch] = [body[k]!, body[k + 2]!, text[t]!];
          inClass ||= (ch >= lo && ch <= hi) || (fold && ch.toLowerCase() >= lo && ch.toLowerCase() <= hi);
          k += 2;
        } else inClass ||= same(body[k]!, text[t]!);
      }
      return inClass !== negated && at(end + 1, t + 1);
    }
    return same(c, text[t]!) && at(g + 1, t + 1);
  };
  return at(0, 0);
}

const naive = (glob: string, text: string, fold: boolean) => expandBraces(glob).some((g) => naiveMatch(g, text, fold));

function generator(seed: number) {
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const many = (most: number, make: () => string, join: string) =>
    Array.from({ length: 1 + Math.floor(random() * most) }, make).join(join);
  const GLOB_PARTS = [
    'a',
    'b',
    'A',
    '.',
    '.git',
    'x.ts',
    '*',
    '?',
    '*.ts',
    '{a,b}',
    '{a,{b,.c}}',
    '[ab]',
    '[!a]',
    '[a-c]',
    'a*',
    '*b',
    '-',
    '+',
    '(',
    '$',
  ];
  const TEXT_PARTS = ['a', 'b', 'B', '.git', 'x.ts', 'X.TS', 'ab', 'ba', 'a.b', 'c', '.', '..', '-', '+(', '$', ''];
  return {
    glob: () => many(3, () => (random() < 0.2 ? '**' : many(2, () => pick(GLOB_PARTS), '')), '/'),
    path: () => normaliseWorkspacePath(many(4, () => pick(TEXT_PARTS), '/')),
  };
}

describe('globs on RE2 keep the documented semantics', () => {
  it('match like the naive matcher over generated path globs and paths (case-insensitive)', () => {
    const { glob, path } = generator(32);
    let compared = 0;
    for (let i = 0; i < 1500; i++) {
      const source = glob();
      // Some generated globs put "**" inside a segment (`a**`), which is refused (tested below).
      if (/[^/]\*\*|\*\*[^/]/.test(source)) continue;
      const compiled = compilePathGlob(source);
      for (let j = 0; j < 20; j++) {
        const text = path();
        // A path glob's leading "./" is dropped, as a path's is.
        const expected = naive(source.replace(/^\.\//, ''), text, true);
        expect(compiled.test(text), `${source} against ${JSON.stringify(text)}`).toBe(expected);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(20_000);
  });

  it('match like the naive matcher for words and tool names, where case matters', () => {
    const { glob, path } = generator(7);
    for (let i = 0; i < 1500; i++) {
      const source = glob().replaceAll('**', '*');
      const word = compileWordGlob(source);
      const name = compileNameGlob(source);
      for (let j = 0; j < 10; j++) {
        const text = path();
        expect(word.test(text), `${source} against ${JSON.stringify(text)}`).toBe(naive(source, text, false));
        // A tool-name glob's `*` and `?` cross "/" (names have none; the rule is the same otherwise).
        expect(name.test(text)).toBe(naive(source.replaceAll('/', '\u0000'), text.replaceAll('/', '\u0000'), false));
      }
    }
  });

  it('spans a line break with "**" as "*" does, so a guard cannot be dodged with one', () => {
    const dotFolders = compilePathGlob('**/.*/**');
    expect(dotFolders.test('a\n/.git/hooks/pre-commit')).toBe(true);
    expect(compilePathGlob('notes/*').test('notes/a\nb')).toBe(true);
  });

  it('gives a readable GlobError for a malformed character class', () => {
    expect(() => compilePathGlob('logs/[z-a].txt')).toThrow(GlobError);
    expect(() => compilePathGlob('logs/[z-a].txt')).toThrow(
      /not a valid character class: invalid character class range/,
    );
    expect(() => compileNameGlob('deploy__{a,b')).toThrow(/"\{" without a matching "\}"/);
    expect(() => compilePathGlob('a**/b')).toThrow(/must be a whole path segment/);
  });
});

describe('globs against crafted long texts (linear time)', () => {
  const SIZE = 20_000;

  it.each([
    ['*a*a*a*b', 'a'.repeat(SIZE), false],
    ['*a*a*a*a*a*a*b', `${'a'.repeat(SIZE)}b`, true],
    ['logs/**/*-*-*-*.log', `logs/${'-'.repeat(SIZE)}`, false],
    ['**/**/**/**/x', `${'a/'.repeat(SIZE / 2)}y`, false],
    ['{a,aa}{a,aa}{a,aa}{a,aa}{a,aa}{a,aa}{a,aa}{a,aa}{a,aa}{a,aa}{a,aa}{a,aa}b', 'a'.repeat(SIZE), false],
  ])('a path glob %s decides a crafted path', (source, text, expected) => {
    expect(compilePathGlob(source).test(text)).toBe(expected);
  });

  it('a word glob and a tool-name glob decide crafted texts', () => {
    expect(compileWordGlob('*-*-*-*.log').test('-'.repeat(SIZE))).toBe(false);
    expect(compileNameGlob('*_*_*_*__x').test('_'.repeat(SIZE))).toBe(false);
  });
});
