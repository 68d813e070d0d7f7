import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importGraph } from './import-graph.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const DOC = readFileSync(path.join(REPO, 'docs/architecture.md'), 'utf8');
const graph = importGraph(REPO);

interface Step {
  step: number;
  file: string;
  from: string;
}

/** The rows of the table under the heading that starts with `heading`. */
function walk(heading: string): Step[] {
  const section = DOC.split('\n## ').find((s) => s.startsWith(heading));
  if (!section) throw new Error(`docs/architecture.md has no section "${heading}"`);
  return section
    .split('\n')
    .filter((line) => /^\|\s*\d+\s*\|/.test(line))
    .map((line) => {
      const [, step = '', file = '', from = ''] = line.split('|').map((cell) => cell.trim());
      return { step: Number(step), file: file.replace(/`/g, ''), from };
    });
}

const imports = (a: string, b: string) => (graph.get(a) ?? []).includes(b);

/** Each "imported by step N" / "imports step N" claim in a walk must hold in the code. */
function brokenLinks(steps: Step[]): string[] {
  const broken: string[] = [];
  for (const { step, file, from } of steps) {
    for (const m of from.matchAll(/\b(imported by|imports) step (\d+)/g)) {
      const other = steps.find((s) => s.step === Number(m[2]))?.file ?? '?';
      const holds = m[1] === 'imports' ? imports(file, other) : imports(other, file);
      if (!holds) broken.push(`step ${step}: ${file} ${m[1]} ${other}`);
    }
  }
  return broken;
}

describe('docs/architecture.md walks the code as it is', () => {
  const mention = walk('A Slack mention');
  const click = walk('An approval click');

  it("keeps the mention's reading table to at most 8 files, none listed twice (running-map.test.ts checks the code)", () => {
    expect(mention.length).toBeGreaterThanOrEqual(5);
    expect(mention.length).toBeLessThanOrEqual(8);
    expect(new Set(mention.map((s) => s.file)).size).toBe(mention.length);
  });

  it('names files that exist', () => {
    for (const { file } of [...mention, ...click]) expect(existsSync(path.join(REPO, file)), file).toBe(true);
  });

  it('links each step to the one it says it comes from', () => {
    expect(brokenLinks(mention)).toEqual([]);
    expect(brokenLinks(click)).toEqual([]);
  });

  it('would notice a link that does not hold', () => {
    expect(
      brokenLinks([...mention.slice(0, 1), { step: 2, file: 'src/core/texts.ts', from: 'imports step 1' }]),
    ).toEqual([`step 2: src/core/texts.ts imports ${mention[0]!.file}`]);
  });
});
