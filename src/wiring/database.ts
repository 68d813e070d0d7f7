import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../db/embedded.ts';
import { migrate } from '../db/migrate.ts';
import { waitForFirstConnection } from '../db/first-connection.ts';
import { createPool, type Pool } from '../db/pool.ts';
import type { Cleanups } from './cleanups.ts';

/** Resolves a path setting against the working directory (the operator's frame of reference). */
export function resolveFromCwd(p: string): string {
  return path.resolve(process.cwd(), p);
}

/**
 * The database this process uses, migrated, and its pools: DATABASE_URL, or an embedded Postgres
 * started here when it is unset. `pool` is for Countersign's own queries; `admissionPool` only
 * takes platform messages in (src/approval/admission.ts), so a message never waits in the pool's
 * queue behind a burst of other work, such as 50 approval clicks' transactions holding every
 * connection (P10 in bench/README.md). pg opens its connections on first use: a process that takes
 * no messages in opens none.
 */
export async function openDatabase(
  config: Config,
  log: Logger,
  cleanups: Cleanups,
): Promise<{ databaseUrl: string; pool: Pool; admissionPool: Pool }> {
  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    const dir = resolveFromCwd(config.EMBEDDED_POSTGRES_DIR);
    log.info({ dir }, 'DATABASE_URL is not set; starting an embedded Postgres');
    const embedded: EmbeddedDatabase = await startEmbeddedPostgres({ dir, log });
    cleanups.add(() => embedded.stop());
    databaseUrl = embedded.url;
  }
  await waitForFirstConnection(databaseUrl, log, config.DATABASE_WAIT_SECONDS);
  await migrate(databaseUrl, log);
  const pool = createPool(databaseUrl, config.DATABASE_POOL_SIZE, log);
  cleanups.add(() => pool.end());
  const admissionPool = createPool(databaseUrl, config.DATABASE_ADMISSION_POOL_SIZE, log);
  cleanups.add(() => admissionPool.end());
  return { databaseUrl, pool, admissionPool };
}
