import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { dropDatabase, onAdmin, withDatabase } from './template-database.ts';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * Creates a database on the run's Postgres server, for one test file: a copy of the run's migrated
 * template, so the app's migrate() at start finds nothing to do. `empty: true` gives a database
 * with no schema, for the tests of migrating itself.
 */
export async function createTestDatabase(prefix = 'cs', options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = inject('pgAdminUrl');
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const template = options.empty ? 'template0' : inject('pgTemplate');
  await onAdmin(adminUrl, (c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  return {
    url: withDatabase(adminUrl, name),
    drop: () => dropDatabase(adminUrl, name),
  };
}
