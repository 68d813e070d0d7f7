import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMcpConfig } from '../../src/agent/tools/mcp/config.ts';
import { McpHub } from '../../src/agent/tools/mcp/hub.ts';
import { createLogger } from '../../src/log.ts';
import type { ProgramSandbox } from '../../src/sandbox/sandbox.ts';
import { testToolContext } from '../helpers/tools.ts';
import {
  leaked,
  loopbackServer,
  makeDeployment,
  startEnvironment,
  withBotSecrets,
  type Deployment,
} from './fixture.ts';

/**
 * A stdio MCP server with one tool, `probe`, that does what it is told: print its environment or a
 * file, write a file, run a shell line, fetch a URL. Plain JSON-RPC, no dependencies: it lives in the
 * test's own folder, away from the checkout.
 */
const PROBE_SERVER = `
import { execSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
const attempt = async (what, arg) => {
  try {
    if (what === 'env') return JSON.stringify(process.env);
    if (what === 'read') return readFileSync(arg, 'utf8');
    if (what === 'write') return (writeFileSync(arg, 'planted'), 'written');
    if (what === 'sh') return execSync(arg, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (what === 'fetch') return await (await fetch(arg)).text();
  } catch (error) {
    return 'FAILED ' + String(error.cause ?? error.message);
  }
  return 'unknown';
};
createInterface({ input: process.stdin }).on('line', async (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize')
    send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'probe', version: '1' } } });
  else if (method === 'tools/list')
    send({ id, result: { tools: [{ name: 'probe', inputSchema: { type: 'object', properties: { what: { type: 'string' }, arg: { type: 'string' } } } }] } });
  else if (method === 'tools/call')
    send({ id, result: { content: [{ type: 'text', text: await attempt(params.arguments.what, params.arguments.arg) }] } });
  else send({ id, error: { code: -32601, message: 'no such method' } });
});
`;

let deployment: Deployment;
let restoreEnv: () => void;
let serverDir: string;
let writable: string;
const log = createLogger('silent');

beforeAll(() => {
  deployment = makeDeployment();
  restoreEnv = withBotSecrets();
  serverDir = path.join(deployment.dir, 'mcp-probe');
  writable = path.join(deployment.dir, 'mcp-data');
  mkdirSync(serverDir);
  mkdirSync(writable);
  writeFileSync(path.join(serverDir, 'server.mjs'), PROBE_SERVER);
});
afterAll(() => {
  restoreEnv();
  deployment.cleanup();
});

/** Starts the probe server in `sandbox` as an MCP config entry with `entry` says, and calls it. */
async function withProbe(
  sandbox: ProgramSandbox,
  entry: Record<string, unknown>,
  use: (probe: (what: string, arg?: string) => Promise<string>) => Promise<void>,
) {
  const config = parseMcpConfig(
    {
      mcpServers: {
        probe: {
          command: process.execPath,
          args: [path.join(serverDir, 'server.mjs')],
          env: { GIVEN: 'by-config' },
          ...entry,
        },
      },
    },
    {},
  );
  const hub = new McpHub(config, log, sandbox);
  try {
    await hub.start(10_000);
    const tool = hub.tools().find((t) => t.name === 'probe__probe');
    if (!tool) throw new Error(`the probe server did not start (${hub.state('probe')})`);
    await use(async (what, arg) => {
      const out = await tool.execute(tool.input.parse({ what, ...(arg ? { arg } : {}) }), testToolContext());
      return typeof out === 'string' ? out : out.content;
    });
  } finally {
    await hub.close();
  }
}

describe('MCP stdio servers in the sandbox', () => {
  it("see their configured env and none of the bot's: not in their own, not through /proc", async () => {
    await withProbe(await deployment.sandbox(), { sandbox: { read: [serverDir] } }, async (probe) => {
      const env = await probe('env');
      expect(JSON.parse(env)).toMatchObject({ GIVEN: 'by-config', HOME: '/tmp/.home' });
      const environ = await probe('sh', `cat /proc/$PPID/environ /proc/1/environ /proc/${process.pid}/environ`);
      for (const text of [env, environ]) {
        expect(leaked(text)).toEqual([]);
        expect(startEnvironment().filter((entry) => text.includes(entry))).toEqual([]);
      }
    });
  });

  it("read nothing of the bot's and no conversation's inbox, and write only where their entry says", async () => {
    await withProbe(
      await deployment.sandbox(),
      { sandbox: { read: [serverDir], write: [writable] } },
      async (probe) => {
        expect(await probe('read', path.join(deployment.app, '.env'))).toContain('FAILED');
        expect(await probe('read', path.join(deployment.ownInbox, 'mine.txt'))).toContain('FAILED');
        expect(await probe('read', path.join(deployment.otherInbox, 'theirs.txt'))).toContain('FAILED');
        expect(await probe('write', path.join(deployment.workspace, 'planted.txt'))).toContain('FAILED');
        expect(await probe('write', path.join(writable, 'ok.txt'))).toBe('written');
      },
    );
    expect(existsSync(path.join(deployment.workspace, 'planted.txt'))).toBe(false);
    expect(existsSync(path.join(writable, 'ok.txt'))).toBe(true);
  });

  it('reach no loopback server unless their entry (or SANDBOX_NETWORK=mcp) allows the network', async () => {
    const server = await loopbackServer();
    try {
      await withProbe(await deployment.sandbox(), { sandbox: { read: [serverDir] } }, async (probe) => {
        expect(await probe('fetch', server.url)).toContain('FAILED');
      });
      expect(server.hits()).toBe(0);
      await withProbe(await deployment.sandbox(), { sandbox: { read: [serverDir], network: true } }, async (probe) => {
        expect(await probe('fetch', server.url)).toBe('reached the loopback server');
      });
      await withProbe(await deployment.sandbox(['mcp']), { sandbox: { read: [serverDir] } }, async (probe) => {
        expect(await probe('fetch', server.url)).toBe('reached the loopback server');
      });
      expect(server.hits()).toBe(2);
    } finally {
      await server.close();
    }
  });

  it('run as the bot only with "sandbox": false, which start-up warns about', async () => {
    const config = parseMcpConfig(
      { mcpServers: { probe: { command: process.execPath, args: ['server.mjs'], sandbox: false } } },
      {},
    );
    expect(config.warnings.join('\n')).toContain('"sandbox": false runs it as Countersign itself');
    await withProbe(await deployment.sandbox(), { sandbox: false }, async (probe) => {
      // Its parent's parent is the bot: its /proc entry is in reach.
      const environ = await probe('sh', `cat /proc/${process.pid}/environ`);
      expect(startEnvironment().filter((entry) => environ.includes(entry))).not.toEqual([]);
    });
  });
});
