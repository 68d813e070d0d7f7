import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  GRAPHILE_WORKER_OWNERS,
  SQL_FUNCTION_OWNERS,
  SQL_WITHOUT_TABLES,
  TABLE_OWNERS,
  type TableOwner,
} from '../../src/db/table-owners.ts';
import { namesIn, sqlLiterals, sqlLiteralsOf, type SqlLiteral } from './sql-literals.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const literals = sqlLiterals(REPO);
const owners: Record<string, TableOwner> = TABLE_OWNERS;
const functionOwners: Record<string, string> = SQL_FUNCTION_OWNERS;

/** Whether `owner` (a module, or a folder ending in `/` whose modules hold statements) covers `file`. */
function covers(owner: string, file: string): boolean {
  return owner.endsWith('/') ? file.startsWith(owner) : owner === file;
}

/** The modules allowed to name `countersign.<name>` in SQL, or undefined when nothing owns the name. */
function allowedFor(name: string): string[] | undefined {
  const table = owners[name];
  if (table) return [table.owner, ...Object.keys(table.sharedWith ?? {})];
  const fn = functionOwners[name];
  return fn ? [fn] : undefined;
}

/** "file:line names countersign.x (owner …)" for each statement naming a table or function outside its owners. */
function strayStatements(found: SqlLiteral[]): string[] {
  const stray: string[] = [];
  for (const { file, line, text } of found) {
    for (const name of namesIn(text, 'countersign')) {
      const allowed = allowedFor(name);
      if (!allowed)
        stray.push(`${file}:${line} names countersign.${name}, which has no owner in src/db/table-owners.ts`);
      else if (!allowed.some((owner) => covers(owner, file)))
        stray.push(`${file}:${line} runs SQL on countersign.${name}; its owner is ${allowed.join(' / ')}`);
    }
    if (namesIn(text, 'graphile_worker').length > 0 && !(file in GRAPHILE_WORKER_OWNERS))
      stray.push(
        `${file}:${line} queries graphile_worker directly; only ${Object.keys(GRAPHILE_WORKER_OWNERS).join(', ')} may`,
      );
  }
  return stray;
}

/** Every module the map lets run SQL. */
function sqlModules(): Set<string> {
  const out = new Set<string>([...Object.keys(SQL_WITHOUT_TABLES), ...Object.keys(GRAPHILE_WORKER_OWNERS)]);
  for (const t of Object.values(owners)) for (const f of [t.owner, ...Object.keys(t.sharedWith ?? {})]) out.add(f);
  for (const f of Object.values(functionOwners)) out.add(f);
  return out;
}

const migrations = readdirSync(path.join(REPO, 'migrations'))
  .filter((f) => f.endsWith('.sql'))
  .map((f) => readFileSync(path.join(REPO, 'migrations', f), 'utf8'))
  .join('\n');
const created = (what: RegExp) => [...new Set([...migrations.matchAll(what)].map((m) => m[1]!))].sort();

describe('one owner per table', () => {
  it('sees SQL in string and template literals, and not in comments', () => {
    const source = [
      '/** Reads countersign.work_items. */',
      "const a = 'SELECT 1 FROM countersign.work_items';",
      'const b = `UPDATE countersign.grants SET x = ${1}`;',
      "const c = 'Select a file from countersign.nowhere';",
    ].join('\n');
    const found = sqlLiteralsOf('src/adapters/x.ts', source);
    expect(found.map((f) => f.line)).toEqual([2, 3]);
    expect(strayStatements(found)).toEqual([
      'src/adapters/x.ts:2 runs SQL on countersign.work_items; its owner is src/queue/sql/ / src/queue/housekeeping-sql.ts',
      'src/adapters/x.ts:3 runs SQL on countersign.grants; its owner is src/approval/grant-store.ts',
    ]);
  });

  it('lets a folder owner’s statement modules run its SQL, and no module beside the folder', () => {
    const statement = "const a = 'UPDATE countersign.work_items SET status = $1';";
    const inside = sqlLiteralsOf('src/queue/sql/settle-work-item.ts', statement);
    const beside = sqlLiteralsOf('src/queue/sql-helpers.ts', statement);
    expect(strayStatements(inside)).toEqual([]);
    expect(strayStatements(beside)).toEqual([
      'src/queue/sql-helpers.ts:1 runs SQL on countersign.work_items; its owner is src/queue/sql/ / src/queue/housekeeping-sql.ts',
    ]);
  });

  it('finds the SQL of src/', () => {
    expect(literals.length).toBeGreaterThan(50);
    expect(literals.some((l) => l.file.startsWith('src/queue/sql/'))).toBe(true);
  });

  it('runs SQL on each table only in its owner (or a module the map names, with why)', () => {
    expect(strayStatements(literals)).toEqual([]);
  });

  it('runs SQL only in modules the map names', () => {
    const allowed = sqlModules();
    const outside = [...new Set(literals.map((l) => l.file))].filter((f) => ![...allowed].some((o) => covers(o, f)));
    expect(outside).toEqual([]);
  });

  it('gives every table the migrations create an owner', () => {
    const tables = created(/CREATE TABLE (?:IF NOT EXISTS )?countersign\.(\w+)/g);
    expect(tables.filter((t) => !(t in owners))).toEqual([]);
  });

  it('gives every SQL function and trigger the migrations create an owner that names it in its docs', () => {
    const functions = created(/CREATE (?:OR REPLACE )?FUNCTION countersign\.(\w+)/g);
    expect(functions.filter((f) => !(f in functionOwners))).toEqual([]);
    const undocumented = Object.entries(functionOwners).filter(
      ([fn, file]) => !commentsOf(readFileSync(path.join(REPO, file), 'utf8')).includes(`countersign.${fn}`),
    );
    expect(undocumented).toEqual([]);
  });

  it('lists each owner module that exists', () => {
    const missing = [...sqlModules()].filter((f) => !existsSync(path.join(REPO, f)));
    expect(missing).toEqual([]);
  });

  it('matches the table of owners in docs/architecture.md', () => {
    const doc = readFileSync(path.join(REPO, 'docs/architecture.md'), 'utf8');
    const section = doc.split('## Tables and their owners')[1]?.split('\n## ')[0] ?? '';
    const rows = [...section.matchAll(/^\|\s*`(\w+)`\s*\|\s*`([^`]+)`/gm)].map((m) => [m[1], m[2]]);
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(Object.entries(owners).map(([t, o]) => [t, o.owner])));
  });
});

/** The text of a file's comments. */
function commentsOf(source: string): string {
  return [...source.matchAll(/\/\*[\s\S]*?\*\/|\/\/.*$/gm)].map((m) => m[0]).join('\n');
}
