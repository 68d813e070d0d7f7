import { readdirSync } from 'node:fs';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR } from '../../src/db/migrate.ts';
import { createTestDatabase } from './db.ts';

async function schemasAndMigrations(url: string): Promise<{ schemas: string[]; migrations: string[] }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const schemas = await client.query<{ name: string }>(
      `SELECT schema_name AS name FROM information_schema.schemata WHERE schema_name IN ('countersign', 'graphile_worker') ORDER BY 1`,
    );
    const migrations = schemas.rows.some((r) => r.name === 'countersign')
      ? (await client.query<{ name: string }>('SELECT name FROM countersign.schema_migrations ORDER BY name')).rows
      : [];
    return { schemas: schemas.rows.map((r) => r.name), migrations: migrations.map((r) => r.name) };
  } finally {
    await client.end();
  }
}

describe('test databases', () => {
  it("are copies of the run's template, with every migration already applied", async () => {
    const db = await createTestDatabase('copy');
    try {
      const files = readdirSync(MIGRATIONS_DIR)
        .filter((f) => /^\d+_.+\.sql$/.test(f))
        .sort();
      expect(await schemasAndMigrations(db.url)).toEqual({
        schemas: ['countersign', 'graphile_worker'],
        migrations: files,
      });
    } finally {
      await db.drop();
    }
  });

  it('are empty when asked, for the tests of migrating', async () => {
    const db = await createTestDatabase('empty', { empty: true });
    try {
      expect(await schemasAndMigrations(db.url)).toEqual({ schemas: [], migrations: [] });
    } finally {
      await db.drop();
    }
  });
});
