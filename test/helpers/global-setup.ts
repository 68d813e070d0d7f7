import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded.ts';
import { createMigratedTemplate, dropDatabase } from './template-database.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Connection string of a maintenance database on the test server; each test file creates its own database there. */
    pgAdminUrl: string;
    /** A database on that server migrated once for this run; test databases are copied from it. */
    pgTemplate: string;
  }
}

let embedded: EmbeddedDatabase | undefined;
let dir: string | undefined;
let admin: { url: string; template: string } | undefined;

/**
 * One Postgres server for the whole run: the one in DATABASE_URL when set (CI's local server),
 * otherwise a fresh embedded cluster in a temporary directory, removed afterwards. On it, one
 * template database migrated once, so a test database is a copy (tens of milliseconds) instead of
 * thirty-odd migrations (seconds) each.
 */
export async function setup(project: TestProject): Promise<void> {
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    // The system's temporary directory, not the checkout: tests write only in their own temp dirs.
    dir = await mkdtemp(path.join(tmpdir(), 'countersign-test-pg-'));
    // mkdtemp makes the directory private; Postgres may run as another user (see startEmbeddedPostgres).
    await chmod(dir, 0o755);
    embedded = await startEmbeddedPostgres({ dir: path.join(dir, 'data'), ephemeral: true, database: 'postgres' });
    adminUrl = embedded.adminUrl;
  }
  // A name of its own: several runs (several checkouts) may share one DATABASE_URL server.
  const template = `cs_template_${randomBytes(6).toString('hex')}`;
  await createMigratedTemplate(adminUrl, template);
  admin = { url: adminUrl, template };
  project.provide('pgAdminUrl', adminUrl);
  project.provide('pgTemplate', template);
}

export async function teardown(): Promise<void> {
  if (admin) await dropDatabase(admin.url, admin.template).catch(() => undefined);
  await embedded?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}
