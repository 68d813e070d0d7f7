import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli } from '../helpers/processes.ts';
import { migrate, MIGRATIONS_DIR } from '../../src/db/migrate.ts';
import { readMigrationFiles } from '../../src/db/migration-files.ts';
import { createLogger } from '../../src/log.ts';

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

    const rows = await query<{ id: number; name: string }>(
      db.url,
      'SELECT id, name FROM countersign.schema_migrations ORDER BY id',
    );
    const { files } = await readMigrationFiles(MIGRATIONS_DIR);
    expect(rows).toEqual(files.map((f) => ({ id: f.id, name: f.name })));
    // graphile-worker's schema is there too.
    const gw = await query(db.url, `SELECT 1 FROM information_schema.schemata WHERE schema_name = 'graphile_worker'`);
    expect(gw).toHaveLength(1);
    // Running again is a no-op.
    const again = runCli(['migrate'], { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
    expect((await again.exited).code).toBe(0);
    expect(again.stdout()).toContain('Database is up to date');
  });

  it('makes a worker refuse to start, in one line, on a database with a migration newer than this release', async () => {
    await migrate(db.url, silent);
    const latest = (await readMigrationFiles(MIGRATIONS_DIR)).files.at(-1)!;
    await query(db.url, `INSERT INTO countersign.schema_migrations (id, name) VALUES (900, '900_from_the_future.sql')`);
    try {
      const worker = runCli(['start', '--role=worker'], {
        DATABASE_URL: db.url,
        LOG_LEVEL: 'silent',
        AI_PROVIDER: 'scripted',
        HTTP_PORT: '0',
        HTTP_HOST: '127.0.0.1',
      });
      expect((await worker.exited).code).toBe(1);
      expect(worker.stderr()).toBe(
        `countersign: the database has migration 900 (900_from_the_future.sql), newer than this release's ${latest.name.slice(0, 3)}: run a release that has it; this one does not know the schema it made\n`,
      );
    } finally {
      await query(db.url, `DELETE FROM countersign.schema_migrations WHERE id = 900`);
    }
  });
});
