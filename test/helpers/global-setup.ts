import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Connection string of a maintenance database on the test server; each test file creates its own database there. */
    pgAdminUrl: string;
  }
}

let embedded: EmbeddedDatabase | undefined;
let dir: string | undefined;

/**
 * One Postgres server for the whole run: the one in DATABASE_URL when set (CI's local server),
 * otherwise a fresh embedded cluster in a temporary directory, removed afterwards.
 */
export async function setup(project: TestProject): Promise<void> {
  const external = process.env.DATABASE_URL;
  if (external) {
    project.provide('pgAdminUrl', external);
    return;
  }
  // The system's temporary directory, not the checkout: tests write only in their own temp dirs.
  dir = await mkdtemp(path.join(tmpdir(), 'countersign-test-pg-'));
  // mkdtemp makes the directory private; Postgres may run as another user (see startEmbeddedPostgres).
  await chmod(dir, 0o755);
  embedded = await startEmbeddedPostgres({ dir: path.join(dir, 'data'), ephemeral: true, database: 'postgres' });
  project.provide('pgAdminUrl', embedded.adminUrl);
}

export async function teardown(): Promise<void> {
  await embedded?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}
