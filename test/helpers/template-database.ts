import pg from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/log.ts';

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function onAdmin<T>(adminUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Creates `name` and migrates it, then closes it to connections. CREATE DATABASE … TEMPLATE refuses
 * a template anyone is connected to, so nothing may stay connected: graphile-worker's pool may
 * still be closing when migrate() returns, and a test that connected by mistake would make every
 * later copy fail.
 */
export async function createMigratedTemplate(adminUrl: string, name: string): Promise<void> {
  await onAdmin(adminUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  await migrate(withDatabase(adminUrl, name), createLogger('silent'));
  await onAdmin(adminUrl, async (c) => {
    await c.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`);
    await c.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, [name]);
  });
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await onAdmin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}
