import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../helpers/db.ts';
import { runCli } from '../../../helpers/processes.ts';

const STDIO_SERVER = path.resolve(import.meta.dirname, '../../../fakes/mcp/stdio-server.ts');

/**
 * A launcher in the shape of `npx -y <server>`: it starts the real MCP server as its own child (on
 * the same stdin and stdout) and a helper that ignores stdin altogether, then writes every pid.
 */
const LAUNCHER = `
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
const [server, pidFile] = process.argv.slice(2);
const child = spawn(process.execPath, [server], { stdio: 'inherit' });
const helper = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
writeFileSync(pidFile, JSON.stringify([process.pid, child.pid, helper.pid]));
child.on('exit', (code) => process.exit(code ?? 0));
`;

/** Loaded into the CLI with NODE_OPTIONS: throws, uncaught, once the MCP server has started. */
const CRASH_WHEN_STARTED = `
import { existsSync } from 'node:fs';
const pidFile = process.env.CRASH_WHEN_EXISTS;
const timer = setInterval(() => {
  if (!existsSync(pidFile)) return;
  clearInterval(timer);
  setTimeout(() => { throw new Error('a simulated crash'); }, 500);
}, 50);
`;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls until `done` holds; the test's timeout bounds the wait. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 100));
}

describe('MCP stdio servers when Countersign exits', () => {
  let db: TestDatabase;
  let dir: string;
  beforeAll(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(path.join(tmpdir(), 'cs-mcp-children-'));
    writeFileSync(path.join(dir, 'launcher.mjs'), LAUNCHER);
    writeFileSync(path.join(dir, 'crash.mjs'), CRASH_WHEN_STARTED);
  });
  /** Every pid a launcher wrote: whatever a failing test left alive is killed here, not left behind. */
  const seen: number[] = [];
  afterAll(async () => {
    for (const pid of seen.filter(alive)) process.kill(pid, 'SIGKILL');
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  function start(name: string, env: Record<string, string> = {}) {
    const pidFile = path.join(dir, `${name}.pids`);
    const config = path.join(dir, `${name}.json`);
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: {
          // Unconfined: this checks the process group's ending by host pids (test/sandbox/ checks the sandbox).
          ops: {
            command: process.execPath,
            args: [path.join(dir, 'launcher.mjs'), STDIO_SERVER, pidFile],
            sandbox: false,
          },
        },
      }),
    );
    const run = runCli(['start'], {
      DATABASE_URL: db.url,
      AI_PROVIDER: 'scripted',
      MCP_CONFIG: config,
      AGENT_WORKSPACE_ROOT: path.join(dir, `${name}-workspace`),
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      ...env,
    });
    return { run, pidFile };
  }

  /** The launcher, the server it started and the helper: every process of the MCP server's family. */
  async function family(pidFile: string): Promise<number[]> {
    await until(() => existsSync(pidFile));
    const pids = JSON.parse(readFileSync(pidFile, 'utf8')) as number[];
    seen.push(...pids);
    expect(pids.every(alive)).toBe(true);
    return pids;
  }

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'ends the whole family on %s',
    async (signal) => {
      const { run, pidFile } = start(signal, { LOG_LEVEL: 'info' });
      const pids = await family(pidFile);
      await until(() => run.stderr().includes('Countersign is running'));
      run.child.kill(signal);
      await run.exited;
      await until(() => !pids.some(alive));
      expect(pids.filter(alive)).toEqual([]);
    },
    60_000,
  );

  it('ends the whole family on a SIGTERM during start-up, before the CLI listens for it', async () => {
    const { run, pidFile } = start('early');
    const pids = await family(pidFile);
    run.child.kill('SIGTERM');
    await run.exited;
    await until(() => !pids.some(alive));
    expect(pids.filter(alive)).toEqual([]);
  }, 60_000);

  it('ends the whole family when Countersign crashes', async () => {
    const pidFile = path.join(dir, 'crash.pids');
    const { run } = start('crash', {
      NODE_OPTIONS: `--import=${path.join(dir, 'crash.mjs')}`,
      CRASH_WHEN_EXISTS: pidFile,
    });
    const pids = await family(pidFile);
    const { code } = await run.exited;
    expect(run.stderr()).toContain('a simulated crash');
    expect(code).not.toBe(0);
    await until(() => !pids.some(alive));
    expect(pids.filter(alive)).toEqual([]);
  }, 60_000);
});
