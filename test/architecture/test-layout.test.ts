/**
 * test/ mirrors src/ folder by folder (test/README.md): the tests of `src/queue/tasks/` are in
 * `test/queue/tasks/`, those of a top-level module `src/log.ts` in `test/log.test.ts`. Tests had
 * drifted into folders of their own (`test/ops`, `test/providers` for `src/agent/providers`), so
 * where a behaviour was tested could not be told from where its code is; this keeps it told.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = path.resolve(import.meta.dirname, '../..');

/** Folders of test/ that hold what tests use or check the whole tree, not tests of one module. */
const INFRASTRUCTURE = ['fakes', 'fixtures', 'helpers', 'architecture'];

/** Repo-relative paths of every file under `dir`, sorted. */
function filesUnder(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(path.join(REPO, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...filesUnder(rel));
    else found.push(rel);
  }
  return found.sort();
}

const exists = (rel: string, kind: 'file' | 'folder'): boolean => {
  try {
    const stat = statSync(path.join(REPO, rel));
    return kind === 'file' ? stat.isFile() : stat.isDirectory();
  } catch {
    return false;
  }
};

/**
 * Why `file` (a repo-relative `.ts` file under test/) has no counterpart under src/, or undefined
 * when it has one. `has` answers whether a src/ path exists, so the rule can be checked on any tree.
 */
function misplaced(file: string, has: (rel: string, kind: 'file' | 'folder') => boolean): string | undefined {
  const folder = path.posix.dirname(path.posix.relative('test', file));
  const [top = ''] = folder.split('/');
  if (INFRASTRUCTURE.includes(top)) return undefined;
  if (folder === '.') {
    const module = /^(.+)\.test\.ts$/.exec(path.posix.basename(file))?.[1];
    return module && has(`src/${module}.ts`, 'file')
      ? undefined
      : `${file}: a test directly under test/ is named after a top-level module (test/log.test.ts for src/log.ts)`;
  }
  // A folder named after a top-level module holds that module's tests: test/cli/ for src/cli.ts.
  if (folder === top && has(`src/${top}.ts`, 'file')) return undefined;
  return has(`src/${folder}`, 'folder')
    ? undefined
    : `${file}: test/${folder}/ has no counterpart src/${folder}/ (nor src/${top}.ts for test/${top}/)`;
}

describe('test/ mirrors src/', () => {
  it('puts every test file in the folder of the src/ folder or top-level module it tests', () => {
    const stray = filesUnder('test')
      .filter((file) => file.endsWith('.ts'))
      .map((file) => misplaced(file, exists))
      .filter((problem) => problem !== undefined);
    expect(stray).toEqual([]);
  });

  it('tells a folder with no src/ counterpart from the mirrors and the infrastructure', () => {
    const src = new Set(['src/queue', 'src/queue/tasks', 'src/adapters/slack', 'src/cli.ts', 'src/log.ts']);
    const has = (rel: string) => src.has(rel);
    expect(misplaced('test/queue/tasks/housekeeping.test.ts', has)).toBeUndefined();
    expect(misplaced('test/adapters/slack/steer.test.ts', has)).toBeUndefined();
    expect(misplaced('test/cli/docs.test.ts', has)).toBeUndefined();
    expect(misplaced('test/log.test.ts', has)).toBeUndefined();
    expect(misplaced('test/fakes/slack/world.ts', has)).toBeUndefined();
    expect(misplaced('test/ops/stop.test.ts', has)).toMatch(/test\/ops\/ has no counterpart src\/ops\//);
    expect(misplaced('test/slack/steer.test.ts', has)).toMatch(/no counterpart src\/slack\//);
    expect(misplaced('test/cli/nested/x.test.ts', has)).toMatch(/no counterpart src\/cli\/nested\//);
    expect(misplaced('test/docs-cards.test.ts', has)).toMatch(/named after a top-level module/);
  });
});
