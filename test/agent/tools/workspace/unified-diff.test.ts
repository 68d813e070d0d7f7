import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DIFF_LIMITS, unifiedDiff } from '../../../../src/agent/tools/workspace/diff.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../../../fixtures/tools/diff');
const fixture = (name: string) => readFileSync(path.join(FIXTURES, name), 'utf8');

/**
 * Applies a unified diff strictly: every context and removed line must match, and every hunk
 * header's counts must match its body. Returns the patched text.
 */
function applyPatch(original: string, patch: string): string {
  const source = original === '' ? [] : original.split(/(?<=\n)/);
  const lines = patch.split('\n');
  expect(lines[0]).toMatch(/^--- /);
  expect(lines[1]).toMatch(/^\+\+\+ /);
  const out: string[] = [];
  let at = 0;
  let i = 2;
  while (i < lines.length) {
    const header = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$/.exec(lines[i]!);
    if (!header) throw new Error(`bad hunk header: ${lines[i]}`);
    const aCount = header[2] === undefined ? 1 : Number(header[2]);
    const bCount = header[4] === undefined ? 1 : Number(header[4]);
    const aStart = aCount === 0 ? Number(header[1]) : Number(header[1]) - 1;
    const bStart = bCount === 0 ? Number(header[3]) : Number(header[3]) - 1;
    expect(aStart).toBeGreaterThanOrEqual(at);
    out.push(...source.slice(at, aStart));
    expect(bStart).toBe(out.length);
    at = aStart;
    let seenA = 0;
    let seenB = 0;
    i++;
    while (i < lines.length && !lines[i]!.startsWith('@@')) {
      const line = lines[i]!;
      const noNewline = lines[i + 1] === '\\ No newline at end of file';
      const text = line.slice(1) + (noNewline ? '' : '\n');
      if (line[0] === ' ' || line[0] === '-') {
        expect(source[at]).toBe(text);
        at++;
        seenA++;
      }
      if (line[0] === ' ' || line[0] === '+') {
        out.push(text);
        seenB++;
      }
      if (!' -+'.includes(line[0] ?? '')) throw new Error(`bad line: ${line}`);
      i += noNewline ? 2 : 1;
    }
    expect([seenA, seenB]).toEqual([aCount, bCount]);
  }
  out.push(...source.slice(at));
  return out.join('');
}

describe('unified diff', () => {
  it.each(['insert', 'two-hunks', 'no-newline'])('matches GNU diff -u byte for byte on the %s fixture', (name) => {
    const expected = fixture(`${name}.diff`).replace(/\n$/, '');
    expect(unifiedDiff(fixture(`${name}.before`), fixture(`${name}.after`), 'a/x', 'b/x')).toBe(expected);
  });

  it('omits the count of a one-line range, as diff -u does', () => {
    expect(unifiedDiff('one\n', 'uno\n', 'a', 'b')).toBe(['--- a', '+++ b', '@@ -1 +1 @@', '-one', '+uno'].join('\n'));
  });

  it('numbers an empty side by the line before it', () => {
    expect(unifiedDiff('', 'a\nb\n', '/dev/null', 'b/x')).toBe(
      ['--- /dev/null', '+++ b/x', '@@ -0,0 +1,2 @@', '+a', '+b'].join('\n'),
    );
    expect(unifiedDiff('a\nb\nc\n', '', 'a/x', 'b/x')).toBe(
      ['--- a/x', '+++ b/x', '@@ -1,3 +0,0 @@', '-a', '-b', '-c'].join('\n'),
    );
  });

  it('tells a missing final newline apart from a present one', () => {
    expect(unifiedDiff('a\nb\n', 'a\nb', 'a', 'b')).toBe(
      ['--- a', '+++ b', '@@ -1,2 +1,2 @@', ' a', '-b', '+b', '\\ No newline at end of file'].join('\n'),
    );
  });

  it('is empty for identical texts', () => {
    expect(unifiedDiff('same\n', 'same\n', 'a', 'b')).toBe('');
  });

  it('stays cheap and correct for a small edit in a large file', () => {
    const before = Array.from({ length: 30_000 }, (_, i) => `row ${i}`).join('\n');
    const after = before.replace('row 100\n', 'row one hundred\n').replace('row 29000\n', '');
    const patch = unifiedDiff(before, after, 'a', 'b');
    expect(patch.split('\n').filter((l) => /^[-+](?![-+]{2} )/.test(l))).toEqual([
      '-row 100',
      '+row one hundred',
      '-row 29000',
    ]);
    expect(applyPatch(before, patch)).toBe(after);
  });

  it('summarises a change too large to align line by line', () => {
    const before = Array.from({ length: 3000 }, (_, i) => `old ${i}`).join('\n');
    const after = Array.from({ length: 3000 }, (_, i) => `new ${i}`).join('\n');
    expect(6000).toBeGreaterThan(DIFF_LIMITS.maxEditDistance);
    expect(unifiedDiff(before, after, 'a/x', 'b/x')).toBe(
      '--- a/x\n+++ b/x\n(too many changes to show line by line: about 3000 lines replaced by 3000)',
    );
  });

  it('always produces a patch that turns the old text into the new one (randomised)', () => {
    let seed = 20240601;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const text = () => {
      const lines = Array.from({ length: Math.floor(random() * 25) }, () => 'abcdef'[Math.floor(random() * 6)]!);
      return lines.join('\n') + (lines.length && random() < 0.7 ? '\n' : '');
    };
    for (let round = 0; round < 500; round++) {
      const before = text();
      const after = random() < 0.5 ? text() : before.replace(/^.*$/m, 'z');
      const patch = unifiedDiff(before, after, 'a', 'b');
      if (before === after) expect(patch).toBe('');
      else expect(applyPatch(before, patch)).toBe(after);
    }
  });
});
