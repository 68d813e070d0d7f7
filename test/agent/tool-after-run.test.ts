/**
 * The hook after a tool runs (`afterToolRun`), which code work uses to record who is behind what a
 * call wrote (docs/policy.md, "Who may countersign a merge"): it is told of every call that ran —
 * also of one a crash left started, which may have written before its result was recorded.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { executeToolCall } from '../../src/agent/tool-execution.ts';
import { ToolRegistry } from '../../src/agent/tools/registry.ts';
import { defineTool } from '../../src/agent/tools/tool.ts';
import { recordToolStart } from '../../src/agent/turn-store.ts';
import { newWorkItem, Priority, type WorkItem } from '../../src/core/work-item.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { enqueueWorkItem } from '../../src/queue/turn-lifecycle.ts';
import { ReplyStream } from '../../src/reply/reply-stream.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { RecordingOutbound } from '../helpers/recording-outbound.ts';

const log = createLogger('silent');
const runs: string[] = [];

/** Writes something; running it twice is not safe. */
const stamp = defineTool({
  name: 'stamp_file',
  kind: 'write',
  description: 'Stamps a file',
  version: '1',
  input: z.object({}),
  approval: 'never',
  risk: 'low',
  idempotent: false,
  async execute(_args, ctx) {
    runs.push(ctx.workItemId);
    return 'stamped';
  },
});

describe('afterToolRun', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let item: WorkItem;

  beforeAll(async () => {
    db = await createTestDatabase();
    await migrate(db.url, log);
    pool = createPool(db.url, 2);
    item = newWorkItem({
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: 'after-run',
      requester: { platform: 'test', userId: 'U1' },
      input: { prompt: 'stamp' },
      reply: { platform: 'test', channel: 'after-run' },
    });
    await enqueueWorkItem(pool, item);
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  function deps(told: string[]) {
    const target = { platform: 'test', channel: 'after-run' };
    return {
      db: pool,
      tools: new ToolRegistry([stamp]),
      sink: new ReplyStream(new RecordingOutbound(), target, { log }),
      settings: {},
      log,
      signal: new AbortController().signal,
      afterToolRun: async (call: { id: string }, tool: { name: string }, outcome: string) => {
        told.push(`${call.id} ${tool.name} ${outcome}`);
      },
    };
  }
  const ctx = () => ({ workItemId: item.id, conversationId: item.conversationId, requester: item.requester });

  it('is told of a call that ran, with why it ran, before its result is recorded', async () => {
    const told: string[] = [];
    const result = await executeToolCall(
      ctx(),
      { id: 'c1', name: 'stamp_file', args: {} },
      deps(told),
      undefined,
      'approved',
    );
    expect(result.content).toBe('stamped');
    expect(told).toEqual(['c1 stamp_file approved']);
  });

  it('is told of a call a crash left started, which is not run again but may have written', async () => {
    await recordToolStart(pool, item.id, 'c2', 'stamp_file', {});
    const before = runs.length;
    const told: string[] = [];
    const result = await executeToolCall(
      ctx(),
      { id: 'c2', name: 'stamp_file', args: {} },
      deps(told),
      undefined,
      'approved',
    );
    expect(result.content).toContain('interrupted');
    expect(runs).toHaveLength(before);
    expect(told).toEqual(['c2 stamp_file approved']);
  });
});
