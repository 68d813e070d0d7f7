import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.ts';
import { runCli } from '../helpers/processes.ts';

async function startWorker(databaseUrl: string, env: Record<string, string> = {}) {
  const run = runCli(['start', '--role=worker'], { DATABASE_URL: databaseUrl, HTTP_PORT: '0', ...env });
  const { code } = await run.exited;
  return { code, err: run.stderr() };
}

/** The stderr lines that are not the start's own info lines. */
const linesOf = (err: string) => err.trim().split('\n');

describe('a start whose DATABASE_URL does not answer', () => {
  it('logs one line per attempt, then exits 1 naming host:port and the reason after DATABASE_WAIT_SECONDS', async () => {
    const port = await freePort(); // closed: nothing listens there
    const run = await startWorker(`postgres://countersign:secret-pw@127.0.0.1:${port}/countersign`, {
      DATABASE_WAIT_SECONDS: '1',
      LOG_LEVEL: 'warn',
    });
    expect(run.code).toBe(1);
    const lines = linesOf(run.err);
    const attempts = lines.filter((l) => l.includes('not reachable'));
    expect(attempts.length).toBeGreaterThan(0);
    for (const line of attempts) {
      expect(JSON.parse(line)).toMatchObject({
        reason: 'connection refused',
        database: `127.0.0.1:${port}/countersign`,
      });
      expect(line).not.toMatch(/stack/);
    }
    expect(lines.at(-1)).toBe(
      `countersign: The database at 127.0.0.1:${port} did not answer within 1s (DATABASE_WAIT_SECONDS): connection refused. Check DATABASE_URL and that the server is up.`,
    );
    expect(run.err).not.toContain('secret-pw');
  }, 30_000);

  it.runIf(process.env.DATABASE_URL)(
    'exits 1 at once for a database that does not exist, without retrying',
    async () => {
      const url = new URL(process.env.DATABASE_URL!);
      url.pathname = '/countersign_no_such_database';
      const run = await startWorker(url.toString(), { DATABASE_WAIT_SECONDS: '600', LOG_LEVEL: 'warn' });
      expect(run.code).toBe(1);
      expect(run.err).not.toContain('not reachable');
      expect(linesOf(run.err).at(-1)).toMatch(
        new RegExp(
          `^countersign: The database at ${url.hostname}:${url.port || 5432} answered, but the database does not exist`,
        ),
      );
    },
    30_000,
  );
});

describe('the same start at a terminal', () => {
  // `script` (util-linux) runs the command on a pseudo-terminal, as a person at a shell would.
  it.runIf(existsSync('/usr/bin/script'))(
    'logs each attempt as one readable line, not JSON',
    async () => {
      const port = await freePort();
      const cli = path.resolve(import.meta.dirname, '../../src/cli.ts');
      const run = spawnSync(
        '/usr/bin/script',
        ['-qec', `${process.execPath} ${cli} start --role=worker`, '/dev/null'],
        {
          encoding: 'utf8',
          env: {
            PATH: process.env.PATH ?? '',
            HOME: process.env.HOME ?? '/root',
            DATABASE_URL: `postgres://countersign@127.0.0.1:${port}/countersign`,
            DATABASE_WAIT_SECONDS: '1',
            HTTP_PORT: '0',
            LOG_LEVEL: 'warn',
          },
        },
      );
      expect(run.status).toBe(1);
      const lines = run.stdout.split(/\r?\n/).filter((l) => l.includes('not reachable'));
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        expect(line).toMatch(/^\d\d:\d\d:\d\d WARN {2}database 127\.0\.0\.1:\d+ not reachable \(connection refused\)/);
        expect(line).not.toContain('{');
      }
    },
    30_000,
  );
});
