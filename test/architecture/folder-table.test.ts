import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { folderRules, importsOutsideTable } from './folder-table.ts';
import { folderOf, importGraph } from './import-graph.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const graph = importGraph(REPO);
const foldersUnder = (dir: string) =>
  readdirSync(path.join(REPO, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
const platforms = foldersUnder('src/adapters');
const rules = folderRules(readFileSync(path.join(REPO, 'docs/architecture.md'), 'utf8'), platforms);

describe("docs/architecture.md's folder table", () => {
  it('names every folder of src/', () => {
    const named = new Set(rules.map((r) => r.folder));
    const folders = [...foldersUnder('src').map((f) => `src/${f}`), ...platforms.map((p) => `src/adapters/${p}`)];
    expect(folders.filter((f) => !named.has(f))).toEqual([]);
  });

  it("holds each folder's imports to its may-import column", () => {
    expect(importsOutsideTable(graph, rules, folderOf)).toEqual([]);
  });

  it('would see an import the column does not allow, and read each shape the column takes', () => {
    const table = [
      '| folder | job | may import |',
      '| --- | --- | --- |',
      '| `src/core` | data | nothing of the app |',
      '| `src/net` | words | nothing of the app; every folder may import it, as it may import core |',
      '| `src/db` | pool | core |',
      '| `src/queue` | turns | core, db (pool, locks), agent |',
      '| `src/skills`, `src/http` | skills | core; http: queue (worker-liveness, for gauges) |',
      '| `src/adapters/<platform>` | platform | core; never `db` |',
      "| `src/adapters` (root) | interface | core, each platform's `rules.ts` |",
      '| `src/wiring` | start-up | everything but adapters and `src/app.ts` |',
      '',
      '| not | this | table |',
    ].join('\n');
    const made = new Map([
      ['src/db/pool.ts', ['src/core/a.ts', 'src/net/why.ts', 'src/queue/q.ts']],
      ['src/http/health.ts', ['src/queue/liveness.ts']],
      ['src/skills/index.ts', ['src/queue/liveness.ts']],
      ['src/adapters/slack/x.ts', ['src/db/pool.ts', 'src/core/a.ts']],
      ['src/adapters/registry.ts', ['src/adapters/slack/rules.ts', 'src/adapters/slack/x.ts']],
      ['src/wiring/db.ts', ['src/db/pool.ts', 'src/config.ts', 'src/adapters/platform.ts', 'src/app.ts']],
    ]);
    const folder = (file: string) =>
      file.startsWith('src/adapters/slack/')
        ? 'src/adapters/slack'
        : file.split('/').length === 2
          ? file.replace(/\.ts$/, '')
          : file.split('/').slice(0, 2).join('/');
    const madeRules = [
      ...folderRules(table, ['slack']),
      { folder: 'src/app', everything: true, except: [], folders: [], files: [], leaf: false },
    ];
    expect(importsOutsideTable(made, madeRules, folder)).toEqual([
      'src/adapters/registry.ts -> src/adapters/slack/x.ts',
      'src/adapters/slack/x.ts -> src/db/pool.ts',
      'src/db/pool.ts -> src/queue/q.ts',
      'src/skills/index.ts -> src/queue/liveness.ts',
      'src/wiring/db.ts -> src/adapters/platform.ts',
      'src/wiring/db.ts -> src/app.ts',
    ]);
  });
});
