import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { runCli } from '../../helpers/processes.ts';

/** A model host that takes requests and never answers them: a turn sent there stays running. */
async function silentModel(): Promise<{ url: string; requests: () => number; close(): Promise<void> }> {
  let requests = 0;
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((_req, res) => {
    requests++;
    open.add(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    close: async () => {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Polls until `done` holds; the test's timeout bounds the wait. */
async function until<T>(read: () => Promise<T> | T, done: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('a console turn whose process was killed', () => {
  let db: TestDatabase;
  let model: Awaited<ReturnType<typeof silentModel>>;
  beforeAll(async () => {
    db = await createTestDatabase();
    model = await silentModel();
  });
  afterAll(async () => {
    await model.close();
    await db.drop();
  });

  const base = () => ({
    DATABASE_URL: db.url,
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    // The next run finds the killed process dead, and releases its job, after a second or so.
    WORKER_HEARTBEAT_SECONDS: '1',
    WORKER_DEAD_AFTER_SECONDS: '3',
  });

  async function statusOf(id: string): Promise<{ status: string; result: unknown; error: string | null }> {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ status: string; result: unknown; error: string | null }>(
        'SELECT status, result, error FROM countersign.work_items WHERE id = $1',
        [id],
      );
      return rows[0]!;
    } finally {
      await client.end();
    }
  }

  // Before, the next run (here with the scripted model) answered it, into a session nobody saw.
  it('is cancelled by the next start, which says so, and never answered', async () => {
    const first = runCli(['start'], {
      ...base(),
      AI_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'sk-ant-test',
      ANTHROPIC_BASE_URL: model.url,
    });
    first.child.stdin?.write('what is our uptime?\n');
    await until(model.requests, (n) => n > 0);
    first.child.kill('SIGKILL');
    await first.exited;

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const { rows } = await client
      .query<{ id: string; status: string }>(`SELECT id, status FROM countersign.work_items`)
      .finally(() => client.end());
    expect(rows).toEqual([{ id: expect.any(String) as string, status: 'running' }]);
    const orphan = rows[0]!.id;

    const next = runCli(['start'], { ...base(), AI_PROVIDER: 'scripted' });
    // Until the orphan is at rest (cancelled here; answered, before): long enough for the dead
    // process's job to be released to this run.
    const settled = await until(
      () => statusOf(orphan),
      (row) => !['queued', 'running'].includes(row.status),
    );
    next.child.stdin?.end('hello\n');
    const { code } = await next.exited;
    expect(code, next.stderr()).toBe(0);
    expect(settled).toEqual({
      status: 'cancelled',
      result: null,
      error: 'its console session ended before the turn finished',
    });
    expect(next.stderr()).toContain(
      'Cancelled 1 console turn left unfinished by an earlier run whose process is gone; it was not answered.',
    );
    // Only this run's answer is printed.
    expect(next.stdout().trimEnd().split('\n')).toEqual([expect.stringContaining('echo: "hello"')]);
    // Still cancelled after this run's worker took (and dropped) the released job.
    expect((await statusOf(orphan)).status).toBe('cancelled');
  }, 60_000);
});
