import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { readdirSync } from 'node:fs';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli } from '../helpers/processes.ts';
import { MIGRATIONS_DIR } from '../../src/db/migrate.ts';

describe('countersign migrate', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('cs', { empty: true });
  });
  afterAll(() => db.drop());

  it('succeeds in three processes started at once and applies each migration exactly once', async () => {
    const runs = [1, 2, 3].map(() => runCli(['migrate'], { DATABASE_URL: db.url, LOG_LEVEL: 'silent' }));
    const results = await Promise.all(runs.map((r) => r.exited));
    for (const [i, result] of results.entries()) expect(result.code, runs[i]!.stderr()).toBe(0);

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string }>(
        'SELECT name FROM countersign.schema_migrations ORDER BY name',
      );
      const files = readdirSync(MIGRATIONS_DIR)
        .filter((f) => f.endsWith('.sql'))
        .sort();
      expect(rows.map((r) => r.name)).toEqual(files);
      // graphile-worker's schema is there too.
      const gw = await client.query(`SELECT 1 FROM information_schema.schemata WHERE schema_name = 'graphile_worker'`);
      expect(gw.rowCount).toBe(1);
    } finally {
      await client.end();
    }
    // Running again is a no-op.
    const again = runCli(['migrate'], { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
    expect((await again.exited).code).toBe(0);
    expect(again.stdout()).toContain('Database is up to date');
  });
});
