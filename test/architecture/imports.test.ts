import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { folderOf, importCircles, importGraph, mutualFolders } from './import-graph.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const graph = importGraph(REPO);

/** Every import from a file in `from` to a file in `to`, as "file -> file". */
function importsBetween(from: (folder: string) => boolean, to: (folder: string) => boolean): string[] {
  const found: string[] = [];
  for (const [file, targets] of graph) {
    for (const target of targets) {
      if (from(folderOf(file)) && to(folderOf(target)) && folderOf(file) !== folderOf(target))
        found.push(`${file} -> ${target}`);
    }
  }
  return found;
}

const isAdapter = (folder: string) => folder.startsWith('src/adapters/') || folder === 'src/adapters';

describe('the shape of src/', () => {
  it('reads every source file', () => {
    expect(graph.size).toBeGreaterThan(50);
    expect(graph.get('src/app.ts')).toContain('src/queue/turn-lifecycle.ts');
    // Multi-line and type-only imports count too.
    expect(graph.get('src/approval/card.ts')).toEqual(
      expect.arrayContaining(['src/core/approval-card.ts', 'src/core/buttons.ts']),
    );
  });

  it('would see a circle and a folder pair if there were one', () => {
    const made = new Map([
      ['src/a/x.ts', ['src/b/y.ts']],
      ['src/b/y.ts', ['src/a/z.ts']],
      ['src/a/z.ts', ['src/a/x.ts']],
    ]);
    expect(importCircles(made)).toEqual([['src/a/x.ts', 'src/a/z.ts', 'src/b/y.ts']]);
    expect(mutualFolders(made)).toHaveLength(1);
  });

  it('has no import circles', () => {
    expect(importCircles(graph)).toEqual([]);
  });

  it('has no two folders that import each other', () => {
    // The registry gathers each platform's rules (pure data) for the composition root; adapters import
    // the interface beside it. That one direction is the registry's job, not a dependency of the folder.
    const registryReadsRules = (from: string, to: string) =>
      from === 'src/adapters/registry.ts' && /^src\/adapters\/[^/]+\/rules\.ts$/.test(to);
    expect(mutualFolders(graph, registryReadsRules)).toEqual([]);
  });

  it('keeps approval cards out of the outbound interface: each platform renders its own', () => {
    expect(graph.get('src/reply/outbound.ts')).not.toContain('src/core/approval-card.ts');
    for (const platform of ['slack', 'discord']) {
      expect(graph.get(`src/adapters/${platform}/outbound.ts`)).not.toContain('src/core/approval-card.ts');
      expect(graph.get(`src/adapters/${platform}/index.ts`)).toContain(`src/adapters/${platform}/cards.ts`);
    }
  });

  it('keeps src/core free of the rest of the app', () => {
    expect(
      importsBetween(
        (f) => f === 'src/core',
        () => true,
      ),
    ).toEqual([]);
  });

  it('keeps the policy engine pure: src/policy imports nothing of the app', () => {
    expect(
      importsBetween(
        (f) => f === 'src/policy',
        () => true,
      ),
    ).toEqual([]);
  });

  it('keeps src/telemetry a leaf every folder may import: it imports nothing of the app', () => {
    expect(
      importsBetween(
        (f) => f === 'src/telemetry',
        () => true,
      ),
    ).toEqual([]);
  });

  it('keeps src/retry a leaf every folder may import: it imports nothing of the app', () => {
    expect(
      importsBetween(
        (f) => f === 'src/retry',
        () => true,
      ),
    ).toEqual([]);
  });

  it('keeps src/net a leaf every folder may import: it imports nothing of the app', () => {
    expect(
      importsBetween(
        (f) => f === 'src/net',
        () => true,
      ),
    ).toEqual([]);
  });

  it('never lets one adapter import another', () => {
    expect(
      importsBetween(
        (f) => f.startsWith('src/adapters/'),
        (f) => f.startsWith('src/adapters/'),
      ),
    ).toEqual([]);
  });

  it('gives adapters their own settings, never the whole Config', () => {
    expect(importsBetween(isAdapter, (f) => f === 'src/config')).toEqual([]);
  });

  it('keeps the agent, approvals, the queue and replies ignorant of the platforms', () => {
    const platformNeutral = (f: string) =>
      ['src/agent', 'src/approval', 'src/queue', 'src/reply', 'src/core'].includes(f);
    expect(importsBetween(platformNeutral, isAdapter)).toEqual([]);
  });

  it('gives every adapter folder a README.md contract', () => {
    const adapters = path.join(REPO, 'src/adapters');
    const folders = readdirSync(adapters, { withFileTypes: true }).filter((e) => e.isDirectory());
    expect(folders.map((f) => f.name)).toEqual(expect.arrayContaining(['console', 'discord', 'slack']));
    const missing = folders.filter((f) => !existsSync(path.join(adapters, f.name, 'README.md')));
    expect(missing.map((f) => `src/adapters/${f.name}/README.md`)).toEqual([]);
  });
});
