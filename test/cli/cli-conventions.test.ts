import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli-invocation.ts';
import { AUDIT_EVENTS } from '../../src/audit/audit-log.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/log.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli } from '../helpers/processes.ts';

async function cli(args: string[], env: Record<string, string> = {}) {
  const run = runCli(args, { LOG_LEVEL: 'silent', ...env });
  const { code } = await run.exited;
  return { code, out: run.stdout(), err: run.stderr() };
}

describe('the CLI conventions', () => {
  it('`countersign --version` prints the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8')) as {
      version: string;
    };
    expect(await cli(['--version'])).toMatchObject({ code: 0, out: `countersign ${version}\n` });
  });

  it('stops quietly when the reader of its output leaves (`countersign audit | head -1`)', async () => {
    const run = runCli(['policy', 'check', '--as', 'console:root', '--tool', 'write_file'], { LOG_LEVEL: 'silent' });
    // The read end closes before the command writes: its first write meets EPIPE, as under `| head`.
    run.child.stdout!.destroy();
    const { code } = await run.exited;
    expect({ code, err: run.stderr() }).toEqual({ code: 0, err: '' });
  });

  it.each(Object.keys(COMMANDS))('`countersign %s --help` prints its usage on stdout and exits 0', async (command) => {
    const run = await cli([command, ...(command === 'schedules' ? ['list'] : []), '--help']);
    expect(run.code, run.err).toBe(0);
    expect(run.out).toMatch(new RegExp(`^Usage: countersign ${command}\\b[\\s\\S]*\\n  ${command}\\b`));
  });

  it('refuses an unknown option in one line with exit 2, before touching any database', async () => {
    const run = await cli(['schedules', 'list', '--jsonx'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(run.code).toBe(2);
    expect(run.out).toBe('');
    expect(run.err).toBe('countersign schedules: unknown option --jsonx (see countersign schedules --help)\n');
  });

  it('exits 2 for a wrong value of a known option', async () => {
    const run = await cli(['start', '--role=boss']);
    expect(run.code).toBe(2);
    expect(run.err.trim().split('\n')).toHaveLength(1);
  });

  it('takes the short person form where it names one account: policy check --as console:root', async () => {
    const run = await cli(['policy', 'check', '--as', 'console:root', '--tool', 'current_time']);
    expect(run.code, run.err).toBe(0);
    expect(run.out).toMatch(/^outcome: /);
  });
});

describe('audit --outcome', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await migrate(db.url, createLogger('silent'));
  });
  afterAll(() => db.drop());

  it('knows exactly the events the audit table can hold', async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ def: string }>(
        `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'approval_audit_event_check'`,
      );
      const allowed = [...rows[0]!.def.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]).sort();
      expect([...AUDIT_EVENTS].sort()).toEqual(allowed);
    } finally {
      await client.end();
    }
  });

  it.each(['budget_refused', 'merged', 'schedule_run', 'connected'])('accepts --outcome=%s', async (event) => {
    const run = await cli(['audit', `--outcome=${event}`, '--person=console:root'], { DATABASE_URL: db.url });
    expect(run.code, run.err).toBe(0);
  });
});
