import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../src/agent/tools/tool.ts';
import { CHARS_PER_TOKEN } from '../../src/agent/tools/result-budget.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import pino from 'pino';
import { readFileTool } from '../../src/agent/tools/workspace/read-tools.ts';
import { workspaceOf } from '../../src/agent/tools/workspace/access.ts';

const MAX_TOKENS = 1000;
/** 5,000 numbered log lines: about 30 times the budget. */
const LOG = Array.from(
  { length: 5000 },
  (_, i) => `2026-11-26T04:00:${String(i % 60).padStart(2, '0')} line ${i} ok`,
).join('\n');

const dumpLog = defineTool({
  name: 'dump_log',
  description: 'Prints the whole log (test)',
  version: '1',
  input: z.object({}),
  approval: 'never',
  risk: 'low',
  idempotent: true,
  execute: async () => LOG,
});

/** A tool result over TOOL_RESULT_MAX_TOKENS, through the real worker: cut for the model, kept whole. */
describe('a tool result too long for the model', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      tools: [dumpLog],
      env: { TOOL_RESULT_MAX_TOKENS: String(MAX_TOKENS) },
      script: {
        rules: [
          { match: '^dump', rounds: [{ toolCalls: [{ name: 'dump_log', args: {} }] }, { text: '{{lastToolResult}}' }] },
        ],
      },
    });
  });
  afterAll(() => h.stop());

  it('is cut to the budget, and kept whole in the conversation’s folder, where the cut result says', async () => {
    const item = await h.say('long-output', 'dump the log');
    const seen = (await h.settled(item.id)).result?.text ?? '';
    expect(seen.length).toBeLessThanOrEqual(MAX_TOKENS * CHARS_PER_TOKEN);
    expect(seen).toContain('line 0 ok');
    expect(seen).toContain('line 4999 ok');
    const kept =
      /\[The whole result \((\d+) characters\) is saved as (inbox\/\S+\/dump_log-result-\S+\.txt): read_file reads any part of it, and share_file posts it whole/.exec(
        seen,
      );
    expect(kept?.[1]).toBe(String(LOG.length));
    expect(readFileSync(path.join(h.config.AGENT_WORKSPACE_ROOT, kept![2]!), 'utf8')).toBe(LOG);
  });

  it('keeps it where only its own conversation’s tools read it', async () => {
    const item = await h.say('long-output-2', 'dump the log again');
    const seen = (await h.settled(item.id)).result?.text ?? '';
    const saved = /saved as (inbox\/\S+\.txt):/.exec(seen)![1]!;
    const read = (conversationId: string) =>
      readFileTool(workspaceOf(h.config.AGENT_WORKSPACE_ROOT)).execute(
        { path: saved, offset: 4999, limit: 1 } as never,
        {
          workItemId: 'w',
          conversationId,
          requester: { platform: 'test', userId: 'U1' },
          signal: new AbortController().signal,
          log: pino({ level: 'silent' }),
        },
      );
    expect(JSON.stringify(await read('long-output-2'))).toContain('line 4998 ok');
    expect(await read('someone-else')).toMatchObject({ isError: true });
  });
});
