import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { ScriptedProvider, type Script } from '../../src/agent/providers/scripted.ts';
import { AnthropicProvider } from '../../src/agent/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/agent/providers/openai.ts';
import type { ModelProvider } from '../../src/agent/model.ts';
import { startFakeAnthropic } from '../fakes/anthropic-server.ts';
import { startFakeOpenAI } from '../fakes/openai-server.ts';
import { loadCheckpoint, saveCheckpoint } from '../../src/agent/turn-store.ts';
import { initialTurnState } from '../../src/queue/tasks/run-work-item.ts';
import { newWorkItem, Priority } from '../../src/core/work-item.ts';

const script: Script = {
  rules: [
    {
      match: '^tool',
      rounds: [
        { text: 'Looking it up.', toolCalls: [{ name: 'current_time', args: { timeZone: 'Europe/Berlin' } }] },
        { text: 'Done: {{lastToolResult}}' },
      ],
    },
    {
      match: '^User asked:',
      rounds: [{ text: 'Summary: I kept calling tools and ran out of steps.' }],
    },
    {
      match: '^forever',
      rounds: Array.from({ length: 20 }, () => ({ toolCalls: [{ name: 'current_time', args: {} }] })),
    },
    { match: '^silent', rounds: [{ text: '' }] },
    {
      match: '^badjson',
      rounds: [
        { toolCalls: [{ name: 'current_time', rawArgs: '{"timeZone": "Europe/' }] },
        { text: 'The tool said: {{lastToolResult}}' },
      ],
    },
    {
      match: '^badargs',
      rounds: [{ toolCalls: [{ name: 'current_time', args: { timeZone: 42 } }] }, { text: 'Got: {{lastToolResult}}' }],
    },
    {
      match: '^nosuchtool',
      rounds: [{ toolCalls: [{ name: 'launch_rockets', args: {} }] }, { text: 'Got: {{lastToolResult}}' }],
    },
    { rounds: [{ text: 'Hello {{lastUser}}' }] },
  ],
};

/** The same specification runs against the scripted model and the real SDKs talking to fake servers. */
const providers: Array<[string, () => Promise<{ provider: ModelProvider; close(): Promise<void> }>]> = [
  ['scripted', async () => ({ provider: new ScriptedProvider(script), close: async () => undefined })],
  [
    'Anthropic SDK → fake Anthropic',
    async () => {
      const fake = await startFakeAnthropic({ script });
      const provider = new AnthropicProvider({
        apiKey: 'test-key',
        model: 'claude-test',
        baseURL: fake.url,
        maxRetries: 0,
      });
      return { provider, close: () => fake.close() };
    },
  ],
  [
    'OpenAI SDK → fake OpenAI',
    async () => {
      const fake = await startFakeOpenAI({ script });
      const provider = new OpenAIProvider({
        name: 'openai',
        apiKey: 'test-key',
        model: 'gpt-test',
        baseURL: `${fake.url}/v1`,
        maxRetries: 0,
      });
      return { provider, close: () => fake.close() };
    },
  ],
];

describe.each(providers)('the agent loop (%s)', (_name, makeProvider) => {
  let h: Harness;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const made = await makeProvider();
    close = made.close;
    h = await startHarness({ provider: made.provider, env: { AGENT_MAX_ROUNDS: '3', AGENT_EMPTY_ROUND_RETRIES: '2' } });
  });
  afterAll(async () => {
    await h.stop();
    await close();
  });

  it('runs a tool the model asks for and answers with its result', async () => {
    const item = await h.say('loop-1', 'tool please');
    const settled = await h.settled(item.id);
    expect(settled.status).toBe('done');
    expect(settled.result?.text).toMatch(/^Looking it up\.\n\nDone: UTC: .*\nEurope\/Berlin: /s);
    const { rows } = await h.app.pool.query(
      `SELECT message FROM countersign.messages WHERE work_item_id = $1 ORDER BY id`,
      [item.id],
    );
    expect(rows.map((r) => r.message.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });

  it('ends a turn that hits the round limit with a short answer from the compacted history', async () => {
    const item = await h.say('loop-2', 'forever loop');
    const settled = await h.settled(item.id);
    expect(settled.status).toBe('done');
    expect(settled.result?.text).toBe('Summary: I kept calling tools and ran out of steps.');
    const { rows } = await h.app.pool.query(
      'SELECT count(*)::int AS n FROM countersign.tool_executions WHERE work_item_id = $1',
      [item.id],
    );
    expect(rows[0].n).toBe(3);
  });

  it('retries an empty round a bounded number of times, then answers with a recovery message', async () => {
    const item = await h.say('loop-3', 'silent please');
    const settled = await h.settled(item.id);
    expect(settled.status).toBe('done');
    expect(settled.result?.text).toMatch(/couldn't produce an answer/);
    const { rows } = await h.app.pool.query(
      'SELECT count(*)::int AS n FROM countersign.model_rounds WHERE work_item_id = $1',
      [item.id],
    );
    expect(rows[0].n).toBe(3); // the first try and two retries
  });

  it('turns malformed tool-call JSON into a tool error the model can read', async () => {
    const item = await h.say('loop-4', 'badjson');
    const settled = await h.settled(item.id);
    expect(settled.status).toBe('done');
    expect(settled.result?.text).toMatch(/^The tool said: Your arguments for current_time were not valid JSON/);
  });

  it('validates tool arguments with the tool’s schema before running it', async () => {
    const item = await h.say('loop-5', 'badargs');
    const settled = await h.settled(item.id);
    expect(settled.result?.text).toMatch(/^Got: Invalid arguments for current_time: timeZone: /);
  });

  it('tells the model when it calls a tool that does not exist', async () => {
    const item = await h.say('loop-6', 'nosuchtool');
    const settled = await h.settled(item.id);
    expect(settled.result?.text).toMatch(
      /^Got: There is no tool named "launch_rockets". Available tools: .*current_time/,
    );
  });

  it('gives the model the conversation’s earlier turns', async () => {
    await h.settled((await h.say('loop-7', 'first message')).id);
    const second = await h.say('loop-7', 'second message');
    await h.settled(second.id);
    const { rows } = await h.app.pool.query(
      `SELECT message->>'text' AS text FROM countersign.messages WHERE conversation_id = 'loop-7' ORDER BY id`,
    );
    expect(rows.map((r) => r.text)).toEqual([
      'first message',
      'Hello first message',
      'second message',
      'Hello second message',
    ]);
  });

  it('ignores a checkpoint written in another format version', async () => {
    const item = newWorkItem({
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: 'loop-8',
      requester: { platform: 'test', userId: 'U1' },
      input: { prompt: 'x' },
      reply: { platform: 'test', channel: 'loop-8' },
    });
    await saveCheckpoint(h.app.pool, item.id, initialTurnState(item));
    expect(await loadCheckpoint(h.app.pool, item.id)).toBeDefined();
    await h.app.pool.query('UPDATE countersign.turn_checkpoints SET format_version = 999 WHERE work_item_id = $1', [
      item.id,
    ]);
    expect(await loadCheckpoint(h.app.pool, item.id)).toBeUndefined();
  });
});
