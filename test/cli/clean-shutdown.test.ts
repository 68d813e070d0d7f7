import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = path.resolve(import.meta.dirname, '../../src/cli.ts');
let parent: string;

beforeAll(async () => {
  parent = await mkdtemp(path.join(os.tmpdir(), 'cs-ctrl-c-'));
  // Root runs Postgres as the `postgres` user, which must reach the data directory.
  await chmod(parent, 0o755);
});
afterAll(() => rm(parent, { recursive: true, force: true }));

/**
 * `countersign start --role=worker` on the embedded default, in a process group of its own as a
 * shell gives a command, and Ctrl-C as a terminal sends it: SIGINT to every process of the group.
 */
async function ctrlC(): Promise<{ code: number | null; err: string }> {
  const child = spawn(process.execPath, [CLI, 'start', '--role=worker'], {
    cwd: parent,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      HOME: parent,
      EMBEDDED_POSTGRES_DIR: path.join(parent, 'postgres'),
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    },
  });
  let err = '';
  const running = new Promise<void>((resolve) =>
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('Countersign is running')) resolve();
    }),
  );
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await Promise.race([running, exited]);
  process.kill(-child.pid!, 'SIGINT');
  const code = await exited;
  return { code, err };
}

describe('Ctrl-C of a worker on the embedded default', () => {
  it('stops cleanly: exit 0 and not one error logged', async () => {
    const { code, err } = await ctrlC();
    expect(err).toContain('shutting down');
    const levels = err
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(levels.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([]);
    expect(err).not.toContain('UNLISTEN');
    expect(code).toBe(0);
  }, 120_000);
});
