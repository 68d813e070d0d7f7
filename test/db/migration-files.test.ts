import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR } from '../../src/db/migrate.ts';
import { readMigrationFiles, RETIRED_NUMBERS_FILE } from '../../src/db/migration-files.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A migrations folder holding `files` (name → content). */
function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'cs-migration-files-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

describe('the numbering of migrations/', () => {
  it('holds in this release: no gap, no number twice, every missing number retired with a reason', async () => {
    const { files, retired } = await readMigrationFiles(MIGRATIONS_DIR);
    expect(files.length).toBeGreaterThan(30);
    expect([...retired].every((id) => !files.some((f) => f.id === id))).toBe(true);
  });

  it('takes each id from the file name and reads the compatible mark from the first line only', async () => {
    const dir = folder({
      '001_first.sql': 'SELECT 1;',
      '002_second.sql': '-- countersign:compatible\n-- adds a column nobody older reads\nSELECT 2;',
      '003_third.sql': 'SELECT 3;\n-- countersign:compatible',
      [RETIRED_NUMBERS_FILE]: '',
      'schema.sql': 'CREATE TABLE not_a_migration ();',
      'README.md': 'not SQL',
    });
    const { files } = await readMigrationFiles(dir);
    expect(files.map((f) => [f.id, f.name, f.compatible])).toEqual([
      [1, '001_first.sql', false],
      [2, '002_second.sql', true],
      [3, '003_third.sql', false],
    ]);
  });

  it('refuses a gap in the numbers', async () => {
    const dir = folder({ '001_a.sql': '', '002_b.sql': '', '004_d.sql': '' });
    await expect(readMigrationFiles(dir)).rejects.toThrow(
      'migration 003 is missing (below 004): number migrations without gaps, or list 003 in migrations/retired-numbers.txt with why it has no file',
    );
  });

  it('accepts a gap whose number is listed as retired, with why', async () => {
    const dir = folder({
      '001_a.sql': '',
      '003_c.sql': '',
      [RETIRED_NUMBERS_FILE]: '# comment\n002 never shipped\n',
    });
    const { files, retired } = await readMigrationFiles(dir);
    expect(files.map((f) => f.id)).toEqual([1, 3]);
    expect([...retired]).toEqual([2]);
  });

  it('refuses a retired number without a reason', async () => {
    const dir = folder({ '001_a.sql': '', '003_c.sql': '', [RETIRED_NUMBERS_FILE]: '002\n' });
    await expect(readMigrationFiles(dir)).rejects.toThrow('line 1 is not "NNN why it has no file"');
  });

  it('refuses two files with the same number, as two merged branches make', async () => {
    const dir = folder({ '001_a.sql': '', '002_mine.sql': '', '002_theirs.sql': '' });
    await expect(readMigrationFiles(dir)).rejects.toThrow(
      'two migrations are numbered 002 (002_mine.sql, 002_theirs.sql): give the newer one the next free number',
    );
  });

  it('refuses a file whose number is listed as retired', async () => {
    const dir = folder({ '001_a.sql': '', '002_b.sql': '', [RETIRED_NUMBERS_FILE]: '002 never shipped\n' });
    await expect(readMigrationFiles(dir)).rejects.toThrow(
      '002_b.sql has a number migrations/retired-numbers.txt lists as retired',
    );
  });

  it('refuses a SQL file not named like a migration, rather than skipping it', async () => {
    const dir = folder({ '001_a.sql': '', '2_b.sql': '' });
    await expect(readMigrationFiles(dir)).rejects.toThrow('migrations/2_b.sql is not named like 001_what_it_does.sql');
  });
});
