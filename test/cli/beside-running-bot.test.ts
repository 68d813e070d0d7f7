import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/log.ts';
import { runCli } from '../helpers/processes.ts';

// The cluster `npm start` would run: started by this (live) process, so a second start is refused.
let parent: string;
let dir: string;
let db: EmbeddedDatabase;

beforeAll(async () => {
  parent = await mkdtemp(path.join(os.tmpdir(), 'cs-beside-'));
  await chmod(parent, 0o755);
  dir = path.join(parent, 'postgres');
  db = await startEmbeddedPostgres({ dir });
  await migrate(db.url, createLogger('silent'));
}, 120_000);

afterAll(async () => {
  await db?.stop();
  await rm(parent, { recursive: true, force: true });
});

async function cli(args: string[]) {
  const run = runCli(args, { LOG_LEVEL: 'silent', EMBEDDED_POSTGRES_DIR: dir });
  const { code } = await run.exited;
  return { code, out: run.stdout(), err: run.stderr() };
}

describe('the operator commands beside a running bot on the embedded default', () => {
  it.each([
    ['status'],
    ['audit', '--since=1h'],
    ['usage'],
    ['grants', 'list'],
    ['schedules', 'list'],
    ['connections', 'list'],
  ])('`countersign %s` uses the running cluster instead of refusing', async (...args) => {
    const run = await cli(args);
    expect(run.err).not.toMatch(/already running/);
    expect(run.code, run.err).toBe(0);
  });

  it('leaves the running cluster running', async () => {
    await cli(['status']);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    expect((await client.query('SELECT 1 AS one')).rows[0]).toEqual({ one: 1 });
    await client.end();
  });
});

describe('the entry point run outside the install folder', () => {
  const bin = path.resolve(import.meta.dirname, '../../bin/countersign.js');
  const installDir = path.resolve(import.meta.dirname, '../..');

  it('names the folder to run an operator command in, instead of starting an empty database', async () => {
    const elsewhere = await mkdtemp(path.join(os.tmpdir(), 'cs-elsewhere-'));
    try {
      const run = spawnSync(process.execPath, [bin, 'status'], {
        cwd: elsewhere,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', HOME: elsewhere },
      });
      expect(run.status).toBe(1);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toContain(`cd ${installDir} && npx countersign status`);
      expect(existsSync(path.join(elsewhere, '.data'))).toBe(false);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });
});
