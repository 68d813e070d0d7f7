import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The numbered files of migrations/ and the rules their numbers keep. A migration's number is its
 * id: files run in number order, the numbers run 001, 002, … without a gap (a number that will never
 * have a file is listed, with why, in `retired-numbers.txt`), and no number is used twice. These are
 * checked before anything touches the database, so a merge that left a hole or a clash fails at once.
 */

/** One file of migrations/, named `NNN_what_it_does.sql`. */
export interface MigrationFile {
  id: number;
  name: string;
  sql: string;
  /** Its first line is COMPATIBLE_MARKER: a release that does not know it may still run against it. */
  compatible: boolean;
}

export interface MigrationFiles {
  files: MigrationFile[];
  /** Numbers that have no file, on purpose. */
  retired: ReadonlySet<number>;
}

/**
 * First line of a migration that a release without it can still run against (it adds, and drops or
 * changes nothing an older release reads or writes). Recorded with the migration when it is applied.
 */
const COMPATIBLE_MARKER = '-- countersign:compatible';

/** The list of numbers that never had (or will never again have) a file. */
export const RETIRED_NUMBERS_FILE = 'retired-numbers.txt';

/** The checked-in schema of migrations/ (test/db/schema-snapshot.test.ts); not a migration. */
export const SCHEMA_SNAPSHOT_FILE = 'schema.sql';

const MIGRATION_NAME = /^(\d{3})_[a-z0-9_]+\.sql$/;

/** Why migrations cannot run: the files break a rule, or the database is not one this release can use. */
export class MigrationsRefused extends Error {
  override readonly name = 'MigrationsRefused';
}

/** Formats an id as its file prefix: 7 → "007". */
export function migrationNumber(id: number): string {
  return String(id).padStart(3, '0');
}

/** Reads and checks the migrations of `dir`; throws MigrationsRefused when the numbering is broken. */
export async function readMigrationFiles(dir: string): Promise<MigrationFiles> {
  const names = (await readdir(dir)).filter((f) => f.endsWith('.sql') && f !== SCHEMA_SNAPSHOT_FILE).sort();
  const misnamed = names.find((f) => !MIGRATION_NAME.test(f));
  if (misnamed)
    throw new MigrationsRefused(
      `migrations/${misnamed} is not named like 001_what_it_does.sql (three digits, lower-case words): rename it`,
    );
  const files = await Promise.all(
    names.map(async (name): Promise<MigrationFile> => {
      const sql = await readFile(path.join(dir, name), 'utf8');
      return {
        id: Number(name.slice(0, 3)),
        name,
        sql,
        compatible: sql.split('\n', 1)[0]!.trim() === COMPATIBLE_MARKER,
      };
    }),
  );
  const retired = parseRetiredNumbers(await readOptional(path.join(dir, RETIRED_NUMBERS_FILE)));
  checkNumbering(files, retired);
  return { files, retired };
}

/** `NNN why` per line; `#` starts a comment. */
function parseRetiredNumbers(text: string): Set<number> {
  const retired = new Set<number>();
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) continue;
    const match = /^(\d{3})\s+\S/.exec(line);
    if (!match)
      throw new MigrationsRefused(
        `migrations/${RETIRED_NUMBERS_FILE} line ${i + 1} is not "NNN why it has no file": ${line.slice(0, 60)}`,
      );
    retired.add(Number(match[1]));
  }
  return retired;
}

/** Throws MigrationsRefused at the first number used twice, retired but present, or missing. */
function checkNumbering(files: readonly MigrationFile[], retired: ReadonlySet<number>): void {
  const byId = new Map<number, string>();
  for (const file of files) {
    const other = byId.get(file.id);
    if (other)
      throw new MigrationsRefused(
        `two migrations are numbered ${migrationNumber(file.id)} (${other}, ${file.name}): give the newer one the next free number`,
      );
    if (retired.has(file.id))
      throw new MigrationsRefused(
        `${file.name} has a number migrations/${RETIRED_NUMBERS_FILE} lists as retired: give it the next free number, or remove ${migrationNumber(file.id)} from the list if the file is the one it waited for`,
      );
    byId.set(file.id, file.name);
  }
  const last = Math.max(0, ...byId.keys());
  for (let id = 1; id <= last; id++) {
    if (byId.has(id) || retired.has(id)) continue;
    throw new MigrationsRefused(
      `migration ${migrationNumber(id)} is missing (below ${migrationNumber(last)}): number migrations without gaps, or list ${migrationNumber(id)} in migrations/${RETIRED_NUMBERS_FILE} with why it has no file`,
    );
  }
}

async function readOptional(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }
}
