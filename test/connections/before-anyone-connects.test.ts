import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { startFakeOAuthServer, type FakeOAuthServer } from '../fakes/oauth/server.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { followConnectLink, returnToCallback } from '../helpers/connect-link.ts';

const script: Script = {
  rules: [
    {
      match: '^list my tickets',
      rounds: [{ toolCalls: [{ name: 'tracker__connect', args: {} }] }, { text: '{{lastToolResult}}' }],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

/**
 * A per-person server no one has connected yet (issue 48): its tools are unknown, but the model is
 * offered `tracker__connect`, whose call asks the requester to connect, as any call of theirs would.
 */
describe('a per-person server before anyone connects', () => {
  let fake: FakeOAuthServer;
  let h: Harness;

  beforeAll(async () => {
    fake = await startFakeOAuthServer();
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-first-connect-'));
    const mcp = path.join(dir, 'mcp.json');
    // A remote server, untrusted by default: the connect tool's facts are Countersign's own.
    writeFileSync(mcp, JSON.stringify({ mcpServers: { tracker: { url: fake.mcpUrl, auth: 'oauth' } } }));
    h = await startHarness({
      script,
      env: {
        MCP_CONFIG: mcp,
        TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        PUBLIC_URL: 'https://countersign.example.com',
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('offers the model a connect tool for the server while its tools are unknown', () => {
    const mcpTools = h.app.tools.list().filter((tool) => tool.mcp?.server === 'tracker');
    expect(mcpTools.map((tool) => tool.name)).toEqual(['tracker__connect']);
  });

  it('asks the first person to connect when their turn needs it, then names the server’s tools', async () => {
    const dave = { platform: 'test', userId: 'U4' };
    const item = await h.say('conv-dave', 'list my tickets', { requester: dave });
    expect((await h.settled(item.id)).status).toBe('awaiting_approval');
    await waitFor(
      async () =>
        [...h.outbound.messages.values()].some((m) =>
          m.text.includes('own tracker account, which is not connected yet'),
        )
          ? true
          : undefined,
      10_000,
      'the card naming the missing connection',
    );

    const started = await h.app.connections!.start(dave, 'tracker');
    if (!started.ok) throw new Error(started.message);
    const { code, state, cookie } = await followConnectLink(h.app.http.port, started.url, fake, 'dave');
    expect((await returnToCallback(h.app.http.port, { code, state }, cookie)).status).toBe(200);

    const continuation = await waitFor(
      async () => {
        const { rows } = await h.app.pool.query<{ id: string }>(
          `SELECT id FROM countersign.work_items WHERE conversation_id = 'conv-dave' AND id <> $1`,
          [item.id],
        );
        return rows[0]?.id;
      },
      10_000,
      'the parked turn to go on',
    );
    const answer = (await h.settled(continuation)).result?.text ?? '';
    expect(answer).toContain('tracker account is connected');
    expect(answer).toMatch(/tracker__whoami/);
    expect(h.app.tools.get('tracker__whoami')).toBeDefined();
  });
});
