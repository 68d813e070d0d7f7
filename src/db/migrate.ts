import path from 'node:path';
import pg from 'pg';
import { runMigrations } from 'graphile-worker';
import type { Logger } from 'pino';
import { INSTALL_DIR } from '../config.ts';
import { migrationNumber, readMigrationFiles } from './migration-files.ts';
import { planMigrations } from './migration-plan.ts';
import {
  applyMigration,
  appliedMigrations,
  ensureMigrationsTable,
  lockMigrations,
  unlockMigrations,
} from './sql/schema-migrations.ts';

export const MIGRATIONS_DIR = path.join(INSTALL_DIR, 'migrations');

export interface MigrationResult {
  applied: string[];
}

export interface MigrateOptions {
  /** Where the numbered migrations are; MIGRATIONS_DIR unless a test brings its own. */
  dir?: string;
}

/**
 * Applies graphile-worker's migrations, then ours from `migrations/NNN_*.sql` in number order
 * (docs/architecture.md, "Migrations"). Refuses — throwing MigrationsRefused with a one-line
 * message, before changing anything — when the files skip or reuse a number, or when the database
 * holds a migration this release does not know (newer and not marked compatible, renamed, or
 * numbered below one applied). Ours run under an advisory lock, each in one transaction with its
 * record, so processes starting together apply each migration exactly once and a failure leaves no
 * half-state.
 */
export async function migrate(
  connectionString: string,
  log: Logger,
  options: MigrateOptions = {},
): Promise<MigrationResult> {
  const release = await readMigrationFiles(options.dir ?? MIGRATIONS_DIR);
  // graphile-worker migrates under its own lock, and refuses a database newer than itself the same way.
  await runMigrations({ connectionString, logger: undefined });
  const client = new pg.Client({ connectionString });
  await client.connect();
  const applied: string[] = [];
  try {
    await lockMigrations(client);
    await ensureMigrationsTable(client);
    const plan = planMigrations(release, await appliedMigrations(client));
    if (plan.newerCompatible.length > 0)
      log.warn(
        { migrations: plan.newerCompatible.map((m) => m.name) },
        'the database has migrations newer than this release, each marked compatible; running against it',
      );
    for (const file of plan.pending) {
      try {
        await applyMigration(client, file);
      } catch (error) {
        throw new Error(`Migration ${file.name} failed: ${(error as Error).message}`, { cause: error });
      }
      applied.push(file.name);
      log.info(
        { migration: file.name, id: migrationNumber(file.id), compatible: file.compatible },
        'applied migration',
      );
    }
    await unlockMigrations(client);
  } finally {
    await client.end();
  }
  return { applied };
}
