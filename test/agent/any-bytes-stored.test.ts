import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

const RAW_BYTES_SERVER = path.resolve(import.meta.dirname, '../fakes/mcp/raw-bytes-server.ts');

const script: Script = {
  rules: [
    {
      match: '^command',
      rounds: [
        // NUL, then bytes that are not UTF-8 (0xff 0xfe).
        { toolCalls: [{ name: 'run_command', args: { command: ['printf', 'a\\000b\\377\\376c'] } }] },
        { text: 'Output: {{lastToolResult}}' },
      ],
    },
    {
      match: '^mcp',
      rounds: [{ toolCalls: [{ name: 'raw__dump', args: {} }] }, { text: 'Dump: {{lastToolResult}}' }],
    },
    {
      match: '^file',
      rounds: [{ toolCalls: [{ name: 'read_file', args: { path: 'late-nul.txt' } }] }, { text: 'File read.' }],
    },
    // The model itself answering with a NUL and a lone surrogate.
    { match: '^model', rounds: [{ text: 'x\u0000y\ud800z' }] },
  ],
};

/**
 * Issue #47 §6: Postgres's jsonb refuses `\u0000` (and lone surrogates), so a tool result or model
 * text holding one failed the whole turn. Every tool kind end to end, through the real worker and
 * real Postgres: the turn answers, and the bytes are replaced and marked.
 */
describe('any bytes a tool or the model produces are stored, and the turn answers', () => {
  let h: Harness;
  let workspace: string;

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-any-bytes-'));
    const policy = path.join(dir, 'policy.yaml');
    writeFileSync(
      policy,
      ['rules:', '  - tool: run_command', '    command: [printf]', '    outcome: allow', ''].join('\n'),
    );
    const mcp = path.join(dir, 'mcp.json');
    writeFileSync(
      mcp,
      // Unconfined: this is about the bytes it answers with; test/sandbox/ holds the confinement.
      JSON.stringify({ mcpServers: { raw: { command: process.execPath, args: [RAW_BYTES_SERVER], sandbox: false } } }),
    );
    h = await startHarness({
      script,
      env: { ENABLE_RUN_COMMAND: 'true', POLICY_FILE: policy, MCP_CONFIG: mcp },
    });
    workspace = h.config.AGENT_WORKSPACE_ROOT;
  });
  afterAll(() => h.stop());

  /** What the tool call's stored result says (the row the turn wrote for it). */
  async function storedToolResult(workItemId: string): Promise<string> {
    const { rows } = await h.app.pool.query<{ content: string }>(
      `SELECT result->>'content' AS content FROM countersign.tool_executions WHERE work_item_id = $1`,
      [workItemId],
    );
    return rows[0]!.content;
  }

  it('a command whose output holds a NUL and bytes that are not UTF-8', async () => {
    const item = await h.say('bytes-command', 'command');
    const done = await h.settled(item.id);
    expect(done.status).toBe('done');
    expect(done.result?.text).toContain('a\ufffdb\ufffd\ufffdc');
    expect(done.result?.text).toContain('[stdout held bytes that are not UTF-8, shown as U+FFFD]');
    expect(done.result?.text).toContain('[1 NUL byte replaced with U+FFFD]');
    expect(await storedToolResult(item.id)).toContain('a\ufffdb');
  });

  it('an MCP tool answering with a NUL and a lone surrogate', async () => {
    const item = await h.say('bytes-mcp', 'mcp');
    const done = await h.settled(item.id);
    expect(done.status).toBe('done');
    expect(done.result?.text).toContain('rec\ufffdord \ufffd end');
    expect(done.result?.text).toMatch(/1 NUL byte and 1 unpaired surrogate replaced/);
  });

  it('read_file of a file with NUL bytes past the part sniffed for binary', async () => {
    writeFileSync(
      path.join(workspace, 'late-nul.txt'),
      Buffer.concat([Buffer.from('line\n'.repeat(2000)), Buffer.from([0, 0, 0x41, 0xc3, 0x0a])]),
    );
    const item = await h.say('bytes-file', 'file');
    const done = await h.settled(item.id);
    expect(done.status).toBe('done');
    expect(done.result?.text).toBe('File read.');
    const stored = await storedToolResult(item.id);
    expect(stored).toContain('\ufffd\ufffdA\ufffd\n');
    expect(stored).toContain('[2 NUL bytes replaced with U+FFFD]');
  });

  it('the model’s own text with a NUL and a lone surrogate', async () => {
    const item = await h.say('bytes-model', 'model');
    const done = await h.settled(item.id);
    expect(done.status).toBe('done');
    expect(done.result?.text).toBe('x\ufffdy\ufffdz');
    const { rows } = await h.app.pool.query<{ messages: string }>(
      `SELECT string_agg(message::text, '') AS messages FROM countersign.messages WHERE conversation_id = 'bytes-model'`,
    );
    expect(rows[0]!.messages).toContain('x\ufffdy\ufffdz');
  });
});
