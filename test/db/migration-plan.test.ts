import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import { RETIRED_NUMBERS_FILE } from '../../src/db/migration-files.ts';
import { createLogger } from '../../src/log.ts';

/**
 * What src/db/migration-plan.ts decides, through migrate() against real Postgres: which
 * migrations run, and which databases a release refuses.
 */

const silent = createLogger('silent');

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Releases as folders of migrations. The tests share one database (graphile-worker's schema is
 * migrated once) and each starts without the countersign schema.
 */
describe('migrations across releases (a rolling deploy)', () => {
  const dirs: string[] = [];
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('cs', { empty: true });
  });
  afterAll(() => db.drop());
  afterEach(async () => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    await query(db.url, 'DROP SCHEMA IF EXISTS countersign CASCADE');
  });

  function release(files: Record<string, string>): string {
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-release-'));
    dirs.push(dir);
    for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
    return dir;
  }

  const v1 = {
    '001_notes.sql': 'CREATE TABLE countersign.notes (id bigint PRIMARY KEY, body text NOT NULL);',
    '002_note_authors.sql': 'ALTER TABLE countersign.notes ADD COLUMN author text;',
  };

  it('lets an older release run against a newer migration marked compatible, and records the mark', async () => {
    const url = db.url;
    const v2 = release({
      ...v1,
      '003_note_tags.sql': '-- countersign:compatible\nALTER TABLE countersign.notes ADD COLUMN tags text[];',
    });
    expect((await migrate(url, silent, { dir: v2 })).applied).toEqual(Object.keys(v1).concat('003_note_tags.sql'));
    const marks = await query<{ id: number; compatible: boolean }>(
      url,
      'SELECT id, compatible FROM countersign.schema_migrations ORDER BY id',
    );
    expect(marks).toEqual([
      { id: 1, compatible: false },
      { id: 2, compatible: false },
      { id: 3, compatible: true },
    ]);
    expect((await migrate(url, silent, { dir: release(v1) })).applied).toEqual([]);
  });

  it('refuses an older release on a newer migration not marked compatible, changing nothing', async () => {
    const url = db.url;
    await migrate(url, silent, {
      dir: release({ ...v1, '003_drop_authors.sql': 'ALTER TABLE countersign.notes DROP COLUMN author;' }),
    });
    await expect(migrate(url, silent, { dir: release(v1) })).rejects.toThrow(
      "the database has migration 003 (003_drop_authors.sql), newer than this release's 002: run a release that has it; this one does not know the schema it made",
    );
  });

  it('refuses when any newer migration is not compatible, even if a later one is', async () => {
    const url = db.url;
    await migrate(url, silent, {
      dir: release({
        ...v1,
        '003_drop_authors.sql': 'ALTER TABLE countersign.notes DROP COLUMN author;',
        '004_note_tags.sql': '-- countersign:compatible\nALTER TABLE countersign.notes ADD COLUMN tags text[];',
      }),
    });
    await expect(migrate(url, silent, { dir: release(v1) })).rejects.toThrow('the database has migration 003');
  });

  it('refuses a migration numbered below one the database already has, instead of running it out of order', async () => {
    const url = db.url;
    await migrate(url, silent, {
      dir: release({ ...v1, '004_tags.sql': 'SELECT 1;', [RETIRED_NUMBERS_FILE]: '003 held for a branch\n' }),
    });
    await expect(
      migrate(url, silent, {
        dir: release({ ...v1, '003_other_branch.sql': 'SELECT 1;', '004_tags.sql': 'SELECT 1;' }),
      }),
    ).rejects.toThrow(
      'migration 003_other_branch.sql is not applied, but the database already has 004: it would run out of order; renumber it above the newest migration',
    );
  });

  it('refuses a release that renamed an applied migration', async () => {
    const url = db.url;
    await migrate(url, silent, { dir: release(v1) });
    await expect(
      migrate(url, silent, { dir: release({ '001_notes.sql': v1['001_notes.sql'], '002_authors.sql': 'SELECT 1;' }) }),
    ).rejects.toThrow(
      'migration 002 was applied as 002_note_authors.sql, but this release names it 002_authors.sql: an applied migration is never renamed or renumbered; restore its name',
    );
  });

  it('refuses a release whose numbering is broken before touching the database', async () => {
    const url = db.url;
    await expect(
      migrate(url, silent, { dir: release({ '001_a.sql': 'SELECT 1;', '003_c.sql': 'SELECT 1;' }) }),
    ).rejects.toThrow('migration 002 is missing');
    expect(await query(url, `SELECT to_regnamespace('countersign') AS s`)).toEqual([{ s: null }]);
  });

  it('upgrades the record an older release kept (names only) without applying anything twice', async () => {
    const url = db.url;
    await query(
      url,
      `CREATE SCHEMA countersign;
       CREATE TABLE countersign.schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
       ${v1['001_notes.sql']}
       INSERT INTO countersign.schema_migrations (name) VALUES ('001_notes.sql');`,
    );
    expect((await migrate(url, silent, { dir: release(v1) })).applied).toEqual(['002_note_authors.sql']);
    const rows = await query<{ id: number; name: string; compatible: boolean }>(
      url,
      'SELECT id, name, compatible FROM countersign.schema_migrations ORDER BY id',
    );
    expect(rows).toEqual([
      { id: 1, name: '001_notes.sql', compatible: false },
      { id: 2, name: '002_note_authors.sql', compatible: false },
    ]);
  });

  it('leaves no trace of a migration that fails', async () => {
    const url = db.url;
    await expect(
      migrate(url, silent, {
        dir: release({ ...v1, '003_broken.sql': 'CREATE TABLE countersign.half (x int); SELECT nope;' }),
      }),
    ).rejects.toThrow('Migration 003_broken.sql failed');
    expect(await query(url, `SELECT to_regclass('countersign.half') AS t`)).toEqual([{ t: null }]);
    expect(await query(url, `SELECT name FROM countersign.schema_migrations WHERE id = 3`)).toEqual([]);
  });
});
