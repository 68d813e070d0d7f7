import type pg from 'pg';
import type { AppliedMigration } from '../migration-plan.ts';
import type { MigrationFile } from '../migration-files.ts';

/**
 * The SQL of countersign.schema_migrations, the record of applied migrations (src/db/migrate.ts
 * runs them). One statement per function, except applyMigration: a migration and its row commit
 * together, so a failure leaves neither.
 */

// Arbitrary but fixed: every Countersign process contends for the same lock (releases before this
// one took it per transaction with pg_advisory_xact_lock; the key is the same, so they exclude each other).
const MIGRATION_LOCK_ID = 0x436f756e; // "Coun"

/** Waits until no other process is migrating; held by this connection until unlocked or closed. */
export async function lockMigrations(client: pg.Client): Promise<void> {
  await client.query('SELECT pg_advisory_lock($1::bigint)', [MIGRATION_LOCK_ID]);
}

export async function unlockMigrations(client: pg.Client): Promise<void> {
  await client.query('SELECT pg_advisory_unlock($1::bigint)', [MIGRATION_LOCK_ID]);
}

/**
 * Creates the record, or brings one from before numbered ids up to date: `id` (the file's number)
 * and `compatible` (its first line said so) were added when a release started refusing databases
 * newer than itself; rows from before are filled from their names and are not compatible.
 */
export async function ensureMigrationsTable(client: pg.Client): Promise<void> {
  await client.query(`
    CREATE SCHEMA IF NOT EXISTS countersign;
    CREATE TABLE IF NOT EXISTS countersign.schema_migrations (
      name text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now(),
      id integer UNIQUE,
      compatible boolean NOT NULL DEFAULT false
    );
    ALTER TABLE countersign.schema_migrations
      ADD COLUMN IF NOT EXISTS id integer UNIQUE,
      ADD COLUMN IF NOT EXISTS compatible boolean NOT NULL DEFAULT false;
    UPDATE countersign.schema_migrations SET id = substring(name from '^[0-9]+')::integer WHERE id IS NULL;
  `);
}

/** Every applied migration. A row an older release wrote (name only) takes its id from its name. */
export async function appliedMigrations(client: pg.Client): Promise<AppliedMigration[]> {
  const { rows } = await client.query<AppliedMigration>(
    `SELECT coalesce(id, substring(name from '^[0-9]+')::integer) AS id, name, compatible
       FROM countersign.schema_migrations ORDER BY 1`,
  );
  return rows;
}

/** Runs one migration and records it, in one transaction. */
export async function applyMigration(client: pg.Client, file: MigrationFile): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(file.sql);
    await client.query(
      'INSERT INTO countersign.schema_migrations (id, name, compatible) VALUES ($1::integer, $2::text, $3::boolean)',
      [file.id, file.name, file.compatible],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
