import { chmodSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { openSandbox, type SandboxConfig } from '../../src/wiring/sandbox.ts';
import { probeBubblewrap } from '../../src/sandbox/sandbox.ts';

const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'cs-sandbox-start-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A logger whose lines the test reads. */
function lines() {
  const written: Array<{ level: number; msg: string }> = [];
  const log = createLogger('info', { write: (line: string) => void written.push(JSON.parse(line)) });
  return { log, written };
}

const config = (overrides: Partial<SandboxConfig> = {}): SandboxConfig => ({
  SANDBOX: 'auto',
  SANDBOX_NETWORK: [],
  SANDBOX_READ_PATHS: [],
  ENABLE_RUN_COMMAND: true,
  CODING_AGENT_COMMAND: undefined,
  MCP_CONFIG: undefined,
  EMBEDDED_POSTGRES_DIR: '.data/postgres',
  WORKTREES_DIR: '.data/worktrees',
  ...overrides,
});

const missing = () => probeBubblewrap([path.join(dir, 'no-such-bwrap')]);

/** A bwrap that cannot make namespaces, as in a container without user namespaces. */
function brokenBwrap(): string {
  const file = path.join(dir, 'bwrap');
  writeFileSync(file, '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n');
  chmodSync(file, 0o755);
  return file;
}

describe('the sandbox at start-up', () => {
  it('finds the real bubblewrap here and confines with it', async () => {
    const { log, written } = lines();
    const sandbox = await openSandbox(config(), log, { runsTurns: true });
    expect(sandbox.status).toEqual({ kind: 'confined', bwrap: '/usr/bin/bwrap' });
    expect(written.map((l) => l.msg)).toEqual(['programs run in a sandbox (bubblewrap)']);
  });

  it('without bwrap, says so in one line and refuses programs (SANDBOX=auto)', async () => {
    const { log, written } = lines();
    const sandbox = await openSandbox(config(), log, { runsTurns: true }, missing);
    expect(sandbox.status).toEqual({ kind: 'unavailable', reason: 'bubblewrap (bwrap) is not installed' });
    expect(written).toHaveLength(1);
    expect(written[0]!.msg).toContain('no sandbox can run here (bubblewrap (bwrap) is not installed)');
    await expect(
      sandbox.launch(['true'], { writable: [], readable: [], hidden: [], network: false, env: {} }),
    ).rejects.toThrow('set SANDBOX=off');
  });

  it('names why a trial run failed (no user namespaces in a container)', async () => {
    const probed = await probeBubblewrap([brokenBwrap()]);
    expect(probed).toEqual({
      ok: false,
      reason: expect.stringContaining('No permissions to create new namespace') as string,
    });
  });

  it('fails the start when SANDBOX=on and none can run', async () => {
    const { log } = lines();
    await expect(openSandbox(config({ SANDBOX: 'on' }), log, { runsTurns: true }, missing)).rejects.toThrow(
      ConfigError,
    );
  });

  it('with SANDBOX=off, tries nothing and warns what it trusts', async () => {
    const { log, written } = lines();
    let probed = false;
    const sandbox = await openSandbox(config({ SANDBOX: 'off' }), log, { runsTurns: true }, async () => {
      probed = true;
      return missing();
    });
    expect(probed).toBe(false);
    expect(sandbox.status.kind).toBe('off');
    expect(written.map((l) => l.msg)).toEqual([expect.stringContaining('SANDBOX=off: programs run as the bot itself')]);
  });

  it('tries nothing and says nothing where nothing starts programs (the console demo)', async () => {
    const { log, written } = lines();
    const sandbox = await openSandbox(
      config({ ENABLE_RUN_COMMAND: false, SANDBOX: 'on' }),
      log,
      { runsTurns: true },
      missing,
    );
    expect(written).toEqual([]);
    expect(sandbox.status.kind).toBe('unavailable');
  });

  it('refuses a SANDBOX_READ_PATHS entry that would show the bot’s own files', async () => {
    const { log } = lines();
    await expect(openSandbox(config({ SANDBOX_READ_PATHS: ['/'] }), log, { runsTurns: true })).rejects.toThrow(
      'SANDBOX_READ_PATHS: / holds',
    );
  });

  it('reads SANDBOX, SANDBOX_NETWORK and SANDBOX_READ_PATHS, naming a bad value', () => {
    const read = loadConfig({ SANDBOX: 'on', SANDBOX_NETWORK: 'run_command, mcp', SANDBOX_READ_PATHS: '/opt/tools' });
    expect(read).toMatchObject({
      SANDBOX: 'on',
      SANDBOX_NETWORK: ['run_command', 'mcp'],
      SANDBOX_READ_PATHS: ['/opt/tools'],
    });
    expect(() => loadConfig({ SANDBOX: 'maybe' })).toThrow('SANDBOX');
    expect(() => loadConfig({ SANDBOX_NETWORK: 'everything' })).toThrow('SANDBOX_NETWORK');
    expect(() => loadConfig({ SANDBOX_READ_PATHS: 'relative/path' })).toThrow('SANDBOX_READ_PATHS');
  });
});
