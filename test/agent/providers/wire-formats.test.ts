import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../../../src/agent/messages.ts';
import type { ModelRequest } from '../../../src/agent/model.ts';
import { toAnthropicMessages } from '../../../src/agent/providers/anthropic.ts';
import { toOpenAIMessages } from '../../../src/agent/providers/openai.ts';
import { startProviderFake, watchRound, type ProviderFake } from './provider-matrix.ts';

/** A conversation with a tool round: text + a tool call, a failed and a good result, then the user again. */
const history: Message[] = [
  { role: 'user', text: 'deploy api' },
  {
    role: 'assistant',
    text: 'Checking first.',
    toolCalls: [
      { id: 'call_1', name: 'status', args: { service: 'api' } },
      { id: 'call_2', name: 'status', args: { service: 'db' } },
    ],
  },
  {
    role: 'tool',
    results: [
      { toolCallId: 'call_1', name: 'status', content: 'healthy', isError: false },
      { toolCallId: 'call_2', name: 'status', content: 'connection refused', isError: true },
    ],
  },
  { role: 'user', text: 'and now?' },
];

const request: ModelRequest = {
  system: 'You are a test.',
  messages: history,
  tools: [
    {
      name: 'status',
      description: 'service status',
      inputSchema: { type: 'object', properties: { service: { type: 'string' } } },
    },
    { name: 'deploy', description: 'deploy a service', inputSchema: { type: 'object', properties: {} } },
  ],
  maxTokens: 256,
};

const fixture = (file: string) =>
  readFileSync(new URL(`../../fixtures/model-streams/${file}`, import.meta.url), 'utf8');

/** The wire shape without prompt-cache breakpoints (their placement has its own test). */
const withoutCacheMarks = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value, (key, v: unknown) => (key === 'cache_control' ? undefined : v)));

let model: ProviderFake | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

describe('the Anthropic wire format', () => {
  it('sends tool results as tool_result blocks in one user turn merged with the next user text', async () => {
    model = await startProviderFake('anthropic-fake', { rounds: [{ text: ['ok'] }] });
    await watchRound(model.provider, request);
    expect(withoutCacheMarks(model.fake.requests[0]!.body.messages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'deploy api' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking first.' },
          { type: 'tool_use', id: 'call_1', name: 'status', input: { service: 'api' } },
          { type: 'tool_use', id: 'call_2', name: 'status', input: { service: 'db' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: 'healthy', is_error: false },
          { type: 'tool_result', tool_use_id: 'call_2', content: 'connection refused', is_error: true },
          { type: 'text', text: 'and now?' },
        ],
      },
    ]);
  });

  it('marks the system prompt and the last tool definition for prompt caching', async () => {
    model = await startProviderFake('anthropic-fake', { rounds: [{ text: ['ok'] }] });
    await watchRound(model.provider, request);
    const body = model.fake.requests[0]!.body;
    expect(body.system).toEqual([{ type: 'text', text: 'You are a test.', cache_control: { type: 'ephemeral' } }]);
    const tools = body.tools as Array<Record<string, unknown>>;
    expect(tools.map((t) => t.cache_control)).toEqual([undefined, { type: 'ephemeral' }]);
    expect(tools[0]).toEqual({
      name: 'status',
      description: 'service status',
      input_schema: request.tools[0]!.inputSchema,
    });
  });

  it('marks the newest request and the end of the conversation as cache breakpoints, four in all', async () => {
    model = await startProviderFake('anthropic-fake', { rounds: [{ text: ['ok'] }] });
    await watchRound(model.provider, request);
    const messages = model.fake.requests[0]!.body.messages as Array<{ content: Array<Record<string, unknown>> }>;
    const marked = messages.flatMap((m, i) =>
      m.content.flatMap((b, j) => (b.cache_control ? [`${i}.${j}:${String(b.type)}`] : [])),
    );
    // The last message is also the newest request here: one mark at its last block.
    expect(marked).toEqual(['2.2:text']);
    const longer: ModelRequest = {
      ...request,
      messages: [
        ...history,
        { role: 'assistant', text: '', toolCalls: [{ id: 'call_3', name: 'status', args: { service: 'web' } }] },
        { role: 'tool', results: [{ toolCallId: 'call_3', name: 'status', content: 'up', isError: false }] },
      ],
    };
    model.fake.enqueue({ kind: 'stream', text: ['ok'] });
    await watchRound(model.provider, longer);
    const next = model.fake.requests[1]!.body.messages as Array<{ content: Array<Record<string, unknown>> }>;
    expect(
      next.flatMap((m, i) => m.content.flatMap((b, j) => (b.cache_control ? [`${i}.${j}:${String(b.type)}`] : []))),
    ).toEqual(['2.2:text', '4.0:tool_result']);
  });

  it('sends no breakpoint at all with PROMPT_CACHE off', async () => {
    model = await startProviderFake('anthropic-fake', { rounds: [{ text: ['ok'] }] }, { promptCache: false });
    await watchRound(model.provider, request);
    expect(JSON.stringify(model.fake.requests[0]!.body)).not.toContain('cache_control');
  });

  it('streams with the API key, the model and the token limit asked for', async () => {
    model = await startProviderFake('anthropic-fake', { rounds: [{ text: ['ok'] }] });
    await watchRound(model.provider, request);
    const { headers, body, path } = model.fake.requests[0]!;
    expect(path).toBe('/v1/messages');
    // Older SDKs send x-api-key, newer ones a bearer token; the API takes either.
    expect(headers['x-api-key'] ?? headers.authorization).toMatch(/^(Bearer )?sk-ant-fake$/);
    expect(headers['anthropic-version']).toBeDefined();
    expect(body).toMatchObject({ model: 'claude-fake', max_tokens: 256, stream: true });
  });

  it('merges consecutive user messages into one turn', () => {
    expect(
      toAnthropicMessages([
        { role: 'user', text: 'one' },
        { role: 'user', text: 'two' },
      ]),
    ).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two' },
        ],
      },
    ]);
  });

  it('sends an empty user message as a placeholder the API accepts', () => {
    expect(toAnthropicMessages([{ role: 'user', text: '  ' }])).toEqual([
      { role: 'user', content: [{ type: 'text', text: '(empty message)' }] },
    ]);
  });

  it('rewrites tool ids from other providers into the characters Anthropic allows, consistently', () => {
    const wire = toAnthropicMessages([
      { role: 'user', text: 'hi' },
      { role: 'assistant', text: '', toolCalls: [{ id: 'tool.0:status', name: 'status', args: {} }] },
      { role: 'tool', results: [{ toolCallId: 'tool.0:status', name: 'status', content: 'ok', isError: false }] },
    ]);
    expect(wire[1]!.content).toEqual([{ type: 'tool_use', id: 'tool_0_status', name: 'status', input: {} }]);
    expect(wire[2]!.content).toEqual([
      { type: 'tool_result', tool_use_id: 'tool_0_status', content: 'ok', is_error: false },
    ]);
  });

  it('parses a recorded stream with text, a tool call and a ping', async () => {
    model = await startProviderFake('anthropic-fake');
    model.fake.enqueue({ kind: 'raw', body: fixture('anthropic-tool-use.sse') });
    const { result } = await watchRound(model.provider, request);
    expect(result).toMatchObject({
      text: "Okay, let's check the weather for San Francisco, CA:",
      stopReason: 'tool_use',
      toolCalls: [
        {
          id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6',
          name: 'get_weather',
          args: { location: 'San Francisco, CA', unit: 'fahrenheit' },
        },
      ],
      usage: { inputTokens: 472, outputTokens: 89, cacheReadTokens: 0, cacheWriteTokens: 0 },
    });
  });

  it('reads cache writes and reads from a recorded stream of a cached prompt', async () => {
    model = await startProviderFake('anthropic-fake');
    model.fake.enqueue({ kind: 'raw', body: fixture('anthropic-cached-text.sse') });
    const { result } = await watchRound(model.provider, request);
    expect(result.text).toBe('All three services are healthy.');
    expect(result.usage).toEqual({ inputTokens: 12, outputTokens: 9, cacheReadTokens: 2048, cacheWriteTokens: 310 });
  });
});

describe('the OpenAI wire format', () => {
  it('sends an assistant message with tool_calls and one tool message per result, errors said in the content', async () => {
    model = await startProviderFake('openai-fake', { rounds: [{ text: ['ok'] }] });
    await watchRound(model.provider, request);
    expect(model.fake.requests[0]!.body.messages).toEqual([
      { role: 'system', content: 'You are a test.' },
      { role: 'user', content: 'deploy api' },
      {
        role: 'assistant',
        content: 'Checking first.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'status', arguments: '{"service":"api"}' } },
          { id: 'call_2', type: 'function', function: { name: 'status', arguments: '{"service":"db"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'healthy' },
      { role: 'tool', tool_call_id: 'call_2', content: 'Error: connection refused' },
      { role: 'user', content: 'and now?' },
    ]);
  });

  it('declares tools as functions and asks for the usage chunk', async () => {
    model = await startProviderFake('openai-fake', { rounds: [{ text: ['ok'] }] });
    await watchRound(model.provider, request);
    const { body, headers, path } = model.fake.requests[0]!;
    expect(path).toBe('/v1/chat/completions');
    expect(headers.authorization).toBe('Bearer sk-fake');
    expect(body).toMatchObject({ model: 'gpt-fake', stream: true, stream_options: { include_usage: true } });
    expect((body.tools as unknown[])[0]).toEqual({
      type: 'function',
      function: { name: 'status', description: 'service status', parameters: request.tools[0]!.inputSchema },
    });
  });

  it('limits tokens with max_tokens on a compatible server', async () => {
    model = await startProviderFake('openai-fake', { rounds: [{ text: ['ok'] }] });
    await watchRound(model.provider, request);
    expect(model.fake.requests[0]!.body).toMatchObject({ max_tokens: 256 });
    expect(model.fake.requests[0]!.body).not.toHaveProperty('max_completion_tokens');
  });

  it('sends an assistant message that only called tools with null content', () => {
    const wire = toOpenAIMessages('', [
      { role: 'user', text: 'hi' },
      { role: 'assistant', text: '', toolCalls: [{ id: 'c', name: 'status', args: {} }] },
    ]);
    expect(wire).toEqual([
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'status', arguments: '{}' } }],
      },
    ]);
  });

  it('shortens tool ids longer than OpenAI accepts, the same way in the call and its result', () => {
    const long = `toolu_${'x'.repeat(60)}`;
    const wire = toOpenAIMessages('s', [
      { role: 'user', text: 'hi' },
      { role: 'assistant', text: '', toolCalls: [{ id: long, name: 'status', args: {} }] },
      { role: 'tool', results: [{ toolCallId: long, name: 'status', content: 'ok', isError: false }] },
    ]) as Array<{ tool_calls?: Array<{ id: string }>; tool_call_id?: string }>;
    const id = wire[2]!.tool_calls![0]!.id;
    expect(id.length).toBeLessThanOrEqual(40);
    expect(wire[3]!.tool_call_id).toBe(id);
  });

  it('parses a recorded stream with two parallel tool calls and a usage chunk', async () => {
    model = await startProviderFake('openai-fake');
    model.fake.enqueue({ kind: 'raw', body: fixture('openai-tool-calls.sse') });
    const { result } = await watchRound(model.provider, request);
    expect(result).toMatchObject({
      text: '',
      stopReason: 'tool_use',
      toolCalls: [
        { id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', name: 'get_weather', args: { location: 'Paris, France' } },
        { id: 'call_9x2', name: 'get_time', args: { zone: 'CET' } },
      ],
      usage: { inputTokens: 18, outputTokens: 37, cacheReadTokens: 64, cacheWriteTokens: 0 },
    });
  });

  it('treats tool calls that finish with "stop" (as Ollama, vLLM and even gpt-4o send them) as a tool-use round', async () => {
    model = await startProviderFake('openai-fake');
    model.fake.enqueue({ kind: 'raw', body: fixture('openai-compatible-stop-with-tool-call.sse') });
    const { result } = await watchRound(model.provider, request);
    expect(result.stopReason).toBe('tool_use');
    expect(result.toolCalls).toEqual([{ id: 'call_k3v1a0xq', name: 'status', args: { service: 'api' } }]);
  });
});

describe('a conversation that changes provider between rounds', () => {
  it('sends a history answered by Anthropic to OpenAI in a shape OpenAI accepts', async () => {
    const first = await startProviderFake('anthropic-fake', {
      rounds: [{ text: ['Checking.'], toolCalls: [{ id: 'toolu_01A', name: 'status', args: { service: 'api' } }] }],
    });
    model = await startProviderFake('openai-fake', { rounds: [{ text: ['All good.'] }] });
    try {
      const asked: ModelRequest = { ...request, messages: [{ role: 'user', text: 'status?' }] };
      const { result } = await watchRound(first.provider, asked);
      const messages: Message[] = [
        ...asked.messages,
        { role: 'assistant', text: result.text, toolCalls: result.toolCalls },
        { role: 'tool', results: [{ toolCallId: 'toolu_01A', name: 'status', content: 'healthy', isError: false }] },
      ];
      const second = await watchRound(model.provider, { ...asked, messages });
      expect(second.result.text).toBe('All good.');
      expect(model.fake.requests[0]!.body.messages).toEqual([
        { role: 'system', content: 'You are a test.' },
        { role: 'user', content: 'status?' },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            { id: 'toolu_01A', type: 'function', function: { name: 'status', arguments: '{"service":"api"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_01A', content: 'healthy' },
      ]);
    } finally {
      await first.close();
    }
  });

  it('sends a history answered by OpenAI to Anthropic in a shape Anthropic accepts', async () => {
    const first = await startProviderFake('openai-fake', {
      rounds: [{ toolCalls: [{ id: 'call_abc', name: 'status', args: { service: 'db' } }] }],
    });
    model = await startProviderFake('anthropic-fake', { rounds: [{ text: ['Fine.'] }] });
    try {
      const asked: ModelRequest = { ...request, messages: [{ role: 'user', text: 'db?' }] };
      const { result } = await watchRound(first.provider, asked);
      const messages: Message[] = [
        ...asked.messages,
        { role: 'assistant', text: result.text, toolCalls: result.toolCalls },
        { role: 'tool', results: [{ toolCallId: 'call_abc', name: 'status', content: 'down', isError: true }] },
      ];
      const second = await watchRound(model.provider, { ...asked, messages });
      expect(second.result.text).toBe('Fine.');
      expect(withoutCacheMarks(model.fake.requests[0]!.body.messages)).toEqual([
        { role: 'user', content: [{ type: 'text', text: 'db?' }] },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'call_abc', name: 'status', input: { service: 'db' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_abc', content: 'down', is_error: true }] },
      ]);
    } finally {
      await first.close();
    }
  });
});

describe('the fakes hold requests to the real APIs’ rules', () => {
  it('rejects a tool_result whose tool_use is not in the previous turn, with Anthropic’s 400', async () => {
    model = await startProviderFake('anthropic-fake', { rounds: [{ text: ['never'] }] }, { maxRetries: 0 });
    const orphan: ModelRequest = {
      ...request,
      messages: [
        { role: 'user', text: 'hi' },
        { role: 'tool', results: [{ toolCallId: 'nobody', name: 'status', content: 'x', isError: false }] },
      ],
    };
    await expect(watchRound(model.provider, orphan)).rejects.toMatchObject({ status: 400 });
  });

  it('rejects a tool message that answers no tool call, with OpenAI’s 400', async () => {
    model = await startProviderFake('openai-fake', { rounds: [{ text: ['never'] }] }, { maxRetries: 0 });
    const orphan: ModelRequest = {
      ...request,
      messages: [
        { role: 'user', text: 'hi' },
        { role: 'tool', results: [{ toolCallId: 'nobody', name: 'status', content: 'x', isError: false }] },
      ],
    };
    await expect(watchRound(model.provider, orphan)).rejects.toMatchObject({ status: 400 });
  });
});
