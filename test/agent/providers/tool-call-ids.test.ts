import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { defineTool } from '../../../src/agent/tools/tool.ts';
import { OpenAIProvider } from '../../../src/agent/providers/openai.ts';
import { startFakeOpenAI } from '../../fakes/openai-server.ts';
import { pieces, type FakeStream, type StartedFakeModel } from '../../fakes/model-http.ts';
import { watchRound } from './provider-matrix.ts';

/**
 * OpenAI-compatible servers that leave tool-call ids out, or send one id twice: every call must still
 * get an id of its own for the turn, because tool executions and approval decisions are keyed by it.
 */

const runs: string[] = [];
const deployTool = defineTool({
  name: 'deploy_service',
  description: 'Deploys a service.',
  version: '1',
  input: z.object({ service: z.string() }),
  approval: 'always',
  risk: 'medium',
  idempotent: false,
  async execute({ service }) {
    runs.push(service);
    return `deployed ${service}`;
  },
});

/** A round of tool calls the way a server that omits (or repeats) ids streams it. */
function callsRound(calls: Array<{ id?: string; name: string; args: Record<string, unknown> }>): FakeStream {
  return {
    kind: 'stream',
    toolCalls: calls.map((c) => ({
      ...(c.id === undefined ? {} : { id: c.id }),
      name: c.name,
      json: pieces(JSON.stringify(c.args), 6),
    })),
  };
}

describe('tool-call ids from OpenAI-compatible servers', () => {
  let fake: StartedFakeModel;
  let provider: OpenAIProvider;
  let h: Harness;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    provider = new OpenAIProvider({
      name: 'openai',
      apiKey: 'sk-fake',
      model: 'gpt-fake',
      baseURL: `${fake.url}/v1`,
      maxRetries: 0,
    });
    h = await startHarness({ provider, tools: [deployTool] });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('gives calls without an id distinct ids, and repeated ids new ones', async () => {
    fake.enqueue(
      callsRound([
        { name: 'current_time', args: {} },
        { name: 'current_time', args: {} },
        { id: 'call_same', name: 'current_time', args: {} },
        { id: 'call_same', name: 'current_time', args: {} },
      ]),
    );
    const { result } = await watchRound(provider, {
      system: '',
      messages: [
        { role: 'user', text: 'what time is it?' },
        { role: 'assistant', text: '', toolCalls: [{ id: 'call_0', name: 'current_time', args: {} }] },
        { role: 'tool', results: [{ toolCallId: 'call_0', name: 'current_time', content: 'noon', isError: false }] },
      ],
      tools: [],
      maxTokens: 64,
    });
    const ids = result.toolCalls.map((c) => c.id);
    expect(new Set([...ids, 'call_0']).size).toBe(5);
    // An id the server made unique is kept; only the repeat is replaced.
    expect(ids[2]).toBe('call_same');
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{1,40}$/);
  });

  it('runs the tool in every round of a turn when the server never sends ids', async () => {
    fake.enqueue(
      callsRound([{ name: 'current_time', args: { timeZone: 'UTC' } }]),
      callsRound([{ name: 'current_time', args: { timeZone: 'Asia/Tokyo' } }]),
      { kind: 'stream', text: ['Both looked up.'] },
    );
    const before = fake.requests.length;
    const item = await h.say('ids-missing', 'time twice');
    const settled = await h.settled(item.id);
    expect(settled).toMatchObject({ status: 'done', result: { text: 'Both looked up.' } });
    const { rows } = await h.app.pool.query(
      `SELECT tool_call_id FROM countersign.tool_executions WHERE work_item_id = $1 ORDER BY started_at`,
      [item.id],
    );
    expect(rows).toHaveLength(2);
    expect(rows[0].tool_call_id).not.toBe(rows[1].tool_call_id);
    // The model read two different results: the second round's call was run, not answered from the first.
    const last = fake.requests.at(-1)!.body.messages as Array<{ role: string; content: string }>;
    const results = last.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(fake.requests.length - before).toBe(3);
    expect(results).toHaveLength(2);
    expect(results[1]).toMatch(/Asia\/Tokyo/);
  });

  it('keeps a card with two calls under one id approvable', async () => {
    runs.length = 0;
    fake.enqueue(
      callsRound([
        { id: 'call_dup', name: 'deploy_service', args: { service: 'web' } },
        { id: 'call_dup', name: 'deploy_service', args: { service: 'worker' } },
      ]),
      { kind: 'stream', text: ['Deployed both.'] },
    );
    const item = await h.say('ids-duplicate', 'deploy both');
    expect((await h.settled(item.id)).status).toBe('awaiting_approval');
    const envelope = await waitFor(
      async () =>
        (
          await h.app.pool.query(
            `SELECT nonce FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
            [item.id],
          )
        ).rows[0] as { nonce: string } | undefined,
      10_000,
      'the card',
    );
    const result = await h.app.approvals.click(`${envelope.nonce}.A`, { platform: 'test', userId: 'U1' });
    if (!result.ok || !('continuation' in result))
      throw new Error(`expected a continuation: ${JSON.stringify(result)}`);
    expect((await h.settled(result.continuation.id)).status).toBe('done');
    expect(runs.sort()).toEqual(['web', 'worker']);
  });
});
