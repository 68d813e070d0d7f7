import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { runCli } from '../../helpers/processes.ts';
import { startFakeOAuthServer, type FakeOAuthServer } from '../../fakes/oauth/server.ts';
import { consoleCommands } from '../../../src/adapters/console/work-commands.ts';
import { SkillRegistry } from '../../../src/skills/index.ts';
import type { ConnectResult } from '../../../src/adapters/platform.ts';
import type { Requester } from '../../../src/core/person.ts';

const ME = { platform: 'console', userId: 'me', workspace: 'local' };
const PUBLIC_URL = 'http://127.0.0.1:9/';

describe('the console’s /connect and /connections, line by line', () => {
  const asked: Array<[Requester, string]> = [];
  const commands = consoleCommands({
    skills: new SkillRegistry({}),
    workCommand: () => ({ ok: false, message: 'no work here' }),
    workStatus: async () => 'no status',
    connect: async (person, server): Promise<ConnectResult> => {
      asked.push([person, server]);
      return server === 'github'
        ? { ok: true, server, url: 'https://auth.example/authorize?state=s1&client_id=c' }
        : { ok: false, message: `There is no per-person server "${server}" here. Known: github.` };
    },
    connections: async (person) => ({ text: `connections of ${person.userId}`, buttons: [] }),
    connectableServers: ['github'],
  });

  it('prints the authorization URL of /connect SERVER, asked for the person typing', async () => {
    const answer = await commands('/connect github', ME);
    expect(answer).toEqual({ reply: expect.stringContaining('\nhttps://auth.example/authorize?state=s1&client_id=c') });
    expect(asked.at(-1)).toEqual([ME, 'github']);
  });

  it('prints why not, the usage without a server, and /connections', async () => {
    expect(await commands('/connect nosuch', ME)).toEqual({
      reply: 'There is no per-person server "nosuch" here. Known: github.',
    });
    const before = asked.length;
    expect(await commands('/connect', ME)).toEqual({ reply: 'Usage: /connect SERVER. Per-person servers: github.' });
    expect(asked).toHaveLength(before);
    expect(await commands('/connections', ME)).toEqual({ reply: 'connections of me' });
  });

  it('leaves lines that only start like the commands to the agent', async () => {
    const before = asked.length;
    expect(await commands('/connector github', ME)).toBeUndefined();
    expect(await commands('/connectionsx', ME)).toBeUndefined();
    expect(await commands('please /connect github', ME)).toBeUndefined();
    expect(asked).toHaveLength(before);
  });
});

describe('/connect and /connections in the console with piped stdin', () => {
  let db: TestDatabase;
  let oauth: FakeOAuthServer;
  let dir: string;
  beforeAll(async () => {
    db = await createTestDatabase();
    oauth = await startFakeOAuthServer();
    dir = mkdtempSync(path.join(tmpdir(), 'cs-console-connect-'));
  });
  afterAll(async () => {
    await oauth?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints a real authorization URL for the operator to open, and their connections', async () => {
    const mcp = path.join(dir, 'mcp.json');
    writeFileSync(mcp, JSON.stringify({ mcpServers: { github: { url: oauth.mcpUrl, auth: 'oauth' } } }));
    const script = path.join(dir, 'script.json');
    writeFileSync(script, JSON.stringify({ rules: [{ rounds: [{ text: 'echo: {{lastUser}}' }] }] }));
    const run = runCli(
      ['start'],
      {
        DATABASE_URL: db.url,
        AI_PROVIDER: 'scripted',
        SCRIPTED_MODEL_SCRIPT: script,
        HTTP_PORT: '0',
        HTTP_HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        AGENT_WORKSPACE_ROOT: path.join(dir, 'workspace'),
        MCP_CONFIG: mcp,
        PUBLIC_URL,
        TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      },
      '/connect github\n/connections\n',
    );
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    const out = run.stdout();
    expect(out).not.toContain('echo:');
    const url = new URL(/(http\S+\/oauth\/start\S+)/.exec(out)?.[1] ?? 'http://missing.invalid/');
    expect(url.origin).toBe(new URL(PUBLIC_URL).origin);
    expect(url.searchParams.get('s')).toBeTruthy();
    expect(out).toContain('github: not connected');
  });
});
