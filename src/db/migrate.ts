import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { runMigrations } from 'graphile-worker';
import type { Logger } from 'pino';
import { INSTALL_DIR } from '../config.ts';

export const MIGRATIONS_DIR = path.join(INSTALL_DIR, 'migrations');

// Arbitrary but fixed: every Countersign process contends for the same lock.
const MIGRATION_LOCK_ID = 0x436f756e; // "Coun"

export interface MigrationResult {
  applied: string[];
}

/**
 * Applies graphile-worker's migrations, then ours from `migrations/*.sql` in name order. Ours run
 * under a transaction-level advisory lock, each in the same transaction as its bookkeeping row, so
 * processes starting together apply each migration exactly once and a failure leaves no half-state.
 */
export async function migrate(connectionString: string, log: Logger): Promise<MigrationResult> {
  // graphile-worker migrates under its own lock; several processes at once are safe.
  await runMigrations({ connectionString, logger: undefined });
  const files = (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  const client = new pg.Client({ connectionString });
  await client.connect();
  const applied: string[] = [];
  try {
    for (const file of files) {
      await client.query('BEGIN');
      try {
        await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID]);
        await client.query(`CREATE SCHEMA IF NOT EXISTS countersign`);
        await client.query(
          `CREATE TABLE IF NOT EXISTS countersign.schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
        );
        const done = await client.query('SELECT 1 FROM countersign.schema_migrations WHERE name = $1', [file]);
        if (done.rowCount === 0) {
          const sql = await readFile(path.join(MIGRATIONS_DIR, file), 'utf8');
          await client.query(sql);
          await client.query('INSERT INTO countersign.schema_migrations (name) VALUES ($1)', [file]);
          applied.push(file);
          log.info({ migration: file }, 'applied migration');
        }
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw new Error(`Migration ${file} failed: ${(error as Error).message}`, { cause: error });
      }
    }
  } finally {
    await client.end();
  }
  return { applied };
}
