import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/agent/tools/tool.ts';
import { enqueueWorkItem } from '../../src/queue/turn-lifecycle.ts';
import { newWorkItem, Priority } from '../../src/core/work-item.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

/** Every run of the test tools, by query, and the queries whose signal was aborted. */
const runs: string[] = [];
const aborted: string[] = [];

/** Read-only and idempotent, with a time limit of 1 s: "hang" never answers. */
const slowLookup = defineTool({
  name: 'slow_lookup',
  description: 'Looks something up, slowly',
  version: '1',
  input: z.object({ q: z.string() }),
  approval: 'never',
  risk: 'low',
  idempotent: true,
  timeLimitSeconds: () => 1,
  async execute({ q }, ctx) {
    runs.push(q);
    ctx.signal.addEventListener('abort', () => aborted.push(q), { once: true });
    // Ignores its signal on purpose: the loop must abandon it all the same.
    return new Promise<string>(() => undefined);
  },
});

/** Read-only and idempotent, with the deployment's default time limit. */
const lookup = defineTool({
  name: 'lookup',
  description: 'Looks something up',
  version: '1',
  input: z.object({ q: z.string() }),
  approval: 'never',
  risk: 'low',
  idempotent: true,
  async execute({ q }) {
    runs.push(q);
    return `found ${q}`;
  },
});

const call = (id: string, name: string, q: string) => ({
  match: `^${id}$`,
  rounds: [{ toolCalls: [{ id, name, args: { q } }] }, { text: 'Got: {{lastToolResult}}' }],
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    tools: [slowLookup, lookup],
    script: {
      rules: [
        call('call_hang', 'slow_lookup', 'hang'),
        call('call_overdue', 'lookup', 'overdue'),
        call('call_recent', 'lookup', 'recent'),
        { rounds: [{ text: 'Hello' }] },
      ],
    },
  });
});
afterAll(async () => {
  await h.stop();
});

async function execution(workItemId: string, toolCallId: string) {
  const { rows } = await h.app.pool.query<{ status: string; result: { content: string; isError?: boolean } }>(
    'SELECT status, result FROM countersign.tool_executions WHERE work_item_id = $1 AND tool_call_id = $2',
    [workItemId, toolCallId],
  );
  return rows[0];
}

/** A work item whose tool call `toolCallId` is already recorded as started `agoSeconds` ago. */
async function itemWithStartedCall(prompt: string, tool: string, q: string, agoSeconds: number) {
  const item = newWorkItem({
    type: 'CHAT',
    priority: Priority.CRITICAL,
    conversationId: `time-limit-${prompt}`,
    requester: { platform: 'test', userId: 'U1' },
    input: { prompt },
    reply: { platform: 'test', channel: `time-limit-${prompt}` },
  });
  // What a worker that froze (or was killed) while running the call leaves behind.
  await h.app.pool.query(
    `INSERT INTO countersign.tool_executions (work_item_id, tool_call_id, tool, args, status, started_at)
     VALUES ($1, $2, $3, $4, 'started', now() - make_interval(secs => $5))`,
    [item.id, prompt, tool, JSON.stringify({ q }), agoSeconds],
  );
  await enqueueWorkItem(h.app.pool, item);
  return item;
}

describe('a tool call’s time limit', () => {
  it('abandons a call that runs past its limit, aborts its signal and records it as failed', async () => {
    const item = await h.say('time-limit-hang', 'call_hang');
    const settled = await h.settled(item.id);
    expect(settled.status).toBe('done');
    const abandoned =
      'slow_lookup did not finish within its time limit of 1 s and was abandoned. It will not be run again automatically. Try a narrower or simpler call instead.';
    expect(settled.result?.text).toBe(`Got: ${abandoned}`);
    expect(await execution(item.id, 'call_hang')).toEqual({
      status: 'finished',
      result: { content: abandoned, isError: true },
    });
    expect(runs.filter((q) => q === 'hang')).toHaveLength(1);
    expect(aborted).toContain('hang');
  });

  it('on replay, reports a call started longer ago than its limit instead of running it again, even a read-only one', async () => {
    // The limit is the deployment's default (120 s); the database's clock says 121 s have passed.
    const item = await itemWithStartedCall('call_overdue', 'lookup', 'overdue', 121);
    const settled = await h.settled(item.id);
    const reported =
      'The lookup call started earlier did not finish within its time limit of 120 s (the worker running it stopped responding). It was not run again. Try a narrower or simpler call instead.';
    expect(settled.result?.text).toBe(`Got: ${reported}`);
    expect(runs).not.toContain('overdue');
    expect(await execution(item.id, 'call_overdue')).toEqual({
      status: 'finished',
      result: { content: reported, isError: true },
    });
  });

  it('on replay, runs an idempotent call again while it is still within its limit', async () => {
    const item = await itemWithStartedCall('call_recent', 'lookup', 'recent', 5);
    const settled = await h.settled(item.id);
    expect(settled.result?.text).toBe('Got: found recent');
    expect(runs).toContain('recent');
  });
});
