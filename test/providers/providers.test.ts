import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/agent/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/agent/providers/openai.ts';
import { FallbackProvider } from '../../src/agent/providers/fallback.ts';
import { createProvider } from '../../src/agent/providers/index.ts';
import { loadConfig } from '../../src/config.ts';
import type { ModelProvider, ModelRequest } from '../../src/agent/model.ts';
import type { Message } from '../../src/agent/messages.ts';
import { startFakeAnthropic } from '../fakes/model/anthropic-server.ts';
import { startFakeOpenAI } from '../fakes/model/openai-server.ts';
import type { FakeModelServer } from '../fakes/model/plan.ts';

const history: Message[] = [
  { role: 'user', text: 'deploy api' },
  { role: 'assistant', text: 'Checking.', toolCalls: [{ id: 'call_1', name: 'status', args: { service: 'api' } }] },
  { role: 'tool', results: [{ toolCallId: 'call_1', name: 'status', content: 'healthy', isError: false }] },
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
    { name: 'deploy', description: 'deploy', inputSchema: { type: 'object', properties: {} } },
  ],
  maxTokens: 256,
};

/** Runs a round and records what reached the sink, including withdrawn rounds. */
async function round(provider: ModelProvider) {
  let shown = '';
  let restarts = 0;
  const result = await provider.streamRound(
    request,
    {
      onText: (d) => (shown += d),
      onRoundRestart: () => {
        restarts += 1;
        shown = '';
      },
    },
    new AbortController().signal,
  );
  return { result, shown, restarts };
}

const waits: number[] = [];
const fastRetry = { sleep: async (ms: number) => void waits.push(ms), baseDelayMs: 1 };

describe.each([
  [
    'anthropic',
    startFakeAnthropic,
    (url: string, retries = 2) =>
      new AnthropicProvider({
        apiKey: 'sk-ant-test',
        model: 'claude-test',
        baseURL: url,
        maxRetries: retries,
        retry: fastRetry,
      }),
  ],
  [
    'openai',
    startFakeOpenAI,
    (url: string, retries = 2) =>
      new OpenAIProvider({
        name: 'openai',
        apiKey: 'sk-test',
        model: 'gpt-test',
        baseURL: `${url}/v1`,
        maxRetries: retries,
        retry: fastRetry,
      }),
  ],
] as const)('%s provider against its fake API', (name, start, make) => {
  let fake: FakeModelServer;
  beforeAll(async () => {
    fake = await start();
  });
  afterAll(() => fake.close());

  it('streams text deltas in order and assembles tool input split across many deltas', async () => {
    fake.queue.push({
      kind: 'stream',
      text: ['Dep', 'loy', 'ing.'],
      toolCalls: [{ id: 'call_9', name: 'deploy', json: '{"service": "api", "env": "prod"}'.split('') }],
    });
    const { result, shown } = await round(make(fake.url));
    expect(shown).toBe('Deploying.');
    expect(result.text).toBe('Deploying.');
    expect(result.toolCalls).toEqual([{ id: 'call_9', name: 'deploy', args: { service: 'api', env: 'prod' } }]);
    expect(result.stopReason).toBe('tool_use');
  });

  it('returns two parallel tool calls in order', async () => {
    fake.queue.push({
      kind: 'stream',
      toolCalls: [
        { id: 'a', name: 'status', json: ['{"service":', '"web"}'] },
        { id: 'b', name: 'status', json: ['{"service":"db"}'] },
      ],
    });
    const { result } = await round(make(fake.url));
    expect(result.toolCalls.map((c) => [c.id, c.args])).toEqual([
      ['a', { service: 'web' }],
      ['b', { service: 'db' }],
    ]);
  });

  it('reports a max_tokens stop', async () => {
    fake.queue.push({ kind: 'stream', text: ['cut sh'], stop: 'max_tokens' });
    expect((await round(make(fake.url))).result.stopReason).toBe('max_tokens');
  });

  it('turns malformed tool JSON into an argument error instead of a crash', async () => {
    fake.queue.push({ kind: 'stream', toolCalls: [{ id: 'bad', name: 'deploy', json: ['{"service": "ap'] }] });
    const { result } = await round(make(fake.url));
    expect(result.toolCalls[0]).toMatchObject({
      id: 'bad',
      args: {},
      argsError: expect.stringMatching(/invalid JSON/),
    });
  });

  it('retries a 429 after the retry-after it was given, then succeeds', async () => {
    waits.length = 0;
    fake.queue.push(
      { kind: 'error', status: 429, body: 'slow down', headers: { 'retry-after': '2' } },
      { kind: 'stream', text: ['fine'] },
    );
    const { result } = await round(make(fake.url));
    expect(result.text).toBe('fine');
    expect(waits).toEqual([2000]);
  });

  it('retries a stream cut mid-round without showing its text twice or keeping its partial tool calls', async () => {
    fake.queue.push(
      {
        kind: 'stream',
        text: ['Hello ', 'wor', 'ld'],
        toolCalls: [{ id: 'x', name: 'deploy', json: ['{}'] }],
        cutAfterEvents: 4,
      },
      { kind: 'stream', text: ['Hello ', 'world'] },
    );
    const { result, shown, restarts } = await round(make(fake.url));
    expect(restarts).toBe(1);
    expect(shown).toBe('Hello world');
    expect(result.text).toBe('Hello world');
    expect(result.toolCalls).toEqual([]);
  });

  it('reports usage tokens, cache included', async () => {
    fake.queue.push({
      kind: 'stream',
      text: ['x'],
      usage: { input: 100, output: 20, cacheRead: 900, cacheWrite: name === 'anthropic' ? 50 : 0 },
    });
    const { result } = await round(make(fake.url));
    expect(result.usage).toEqual({
      inputTokens: 100,
      outputTokens: 20,
      cacheReadTokens: 900,
      cacheWriteTokens: name === 'anthropic' ? 50 : 0,
    });
  });
});

describe('wire formats', () => {
  it('sends neutral history as Anthropic blocks, with the system prompt and tool list marked for caching', async () => {
    const fake = await startFakeAnthropic();
    try {
      fake.queue.push({ kind: 'stream', text: ['ok'] });
      await round(
        new AnthropicProvider({ apiKey: 'sk-ant-test', model: 'claude-test', baseURL: fake.url, maxRetries: 0 }),
      );
      const body = fake.requests[0]!.body;
      const headers = fake.requests[0]!.headers;
      expect(headers['x-api-key'] ?? headers.authorization).toMatch(/sk-ant-test/);
      expect(body.stream).toBe(true);
      expect(body.system).toEqual([{ type: 'text', text: 'You are a test.', cache_control: { type: 'ephemeral' } }]);
      const tools = body.tools as Array<Record<string, unknown>>;
      expect(tools.at(-1)).toMatchObject({ name: 'deploy', cache_control: { type: 'ephemeral' } });
      expect(tools[0]).not.toHaveProperty('cache_control');
      expect(body.messages).toEqual([
        { role: 'user', content: [{ type: 'text', text: 'deploy api' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'call_1', name: 'status', input: { service: 'api' } },
          ],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'healthy', is_error: false }],
        },
      ]);
    } finally {
      await fake.close();
    }
  });

  it('sends neutral history as Chat Completions messages and asks for the usage chunk', async () => {
    const fake = await startFakeOpenAI();
    try {
      fake.queue.push({ kind: 'stream', text: ['ok'] });
      await round(
        new OpenAIProvider({
          name: 'openai',
          apiKey: 'sk-test',
          model: 'gpt-test',
          baseURL: `${fake.url}/v1`,
          maxRetries: 0,
        }),
      );
      const body = fake.requests[0]!.body;
      expect(fake.requests[0]!.headers.authorization).toBe('Bearer sk-test');
      expect(body.stream_options).toEqual({ include_usage: true });
      expect(body.messages).toEqual([
        { role: 'system', content: 'You are a test.' },
        { role: 'user', content: 'deploy api' },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'status', arguments: '{"service":"api"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'healthy' },
      ]);
      expect((body.tools as unknown[])[0]).toEqual({
        type: 'function',
        function: { name: 'status', description: 'service status', parameters: request.tools[0]!.inputSchema },
      });
    } finally {
      await fake.close();
    }
  });

  it.each([
    ['anthropic', 'anthropic-tool-use.sse', startFakeAnthropic, "Okay, let's check the weather for San Francisco, CA:"],
    ['openai', 'openai-tool-calls.sse', startFakeOpenAI, ''],
  ] as const)('parses a recorded %s stream', async (name, file, start, text) => {
    const fake = await start();
    try {
      fake.queue.push({
        kind: 'raw',
        contentType: 'text/event-stream',
        body: readFileSync(`test/fixtures/model-streams/${file}`, 'utf8'),
      });
      const provider =
        name === 'anthropic'
          ? new AnthropicProvider({ apiKey: 'k', model: 'm', baseURL: fake.url, maxRetries: 0 })
          : new OpenAIProvider({ name: 'openai', apiKey: 'k', model: 'm', baseURL: `${fake.url}/v1`, maxRetries: 0 });
      const { result } = await round(provider);
      expect(result.text).toBe(text);
      expect(result.stopReason).toBe('tool_use');
      if (name === 'anthropic') {
        expect(result.toolCalls).toEqual([
          {
            id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6',
            name: 'get_weather',
            args: { location: 'San Francisco, CA', unit: 'fahrenheit' },
          },
        ]);
        expect(result.usage).toMatchObject({ inputTokens: 472, outputTokens: 89 });
      } else {
        expect(result.toolCalls).toEqual([
          { id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', name: 'get_weather', args: { location: 'Paris, France' } },
          { id: 'call_9x2', name: 'get_time', args: { zone: 'CET' } },
        ]);
        expect(result.usage).toEqual({ inputTokens: 18, outputTokens: 37, cacheReadTokens: 64, cacheWriteTokens: 0 });
      }
    } finally {
      await fake.close();
    }
  });
});

describe('fallback between providers', () => {
  let anthropic: FakeModelServer;
  let openai: FakeModelServer;
  beforeAll(async () => {
    anthropic = await startFakeAnthropic();
    openai = await startFakeOpenAI();
  });
  afterAll(async () => {
    await anthropic.close();
    await openai.close();
  });
  const pair = () =>
    new FallbackProvider([
      new AnthropicProvider({
        apiKey: 'k',
        model: 'claude-test',
        baseURL: anthropic.url,
        maxRetries: 2,
        retry: fastRetry,
      }),
      new OpenAIProvider({
        name: 'openai',
        apiKey: 'k',
        model: 'gpt-test',
        baseURL: `${openai.url}/v1`,
        maxRetries: 0,
      }),
    ]);

  it('lets the next provider answer when the first stays overloaded (529) through its retries', async () => {
    const before = anthropic.requests.length;
    for (let i = 0; i < 3; i++) anthropic.queue.push({ kind: 'error', status: 529, body: 'Overloaded' });
    openai.queue.push({ kind: 'stream', text: ['from the fallback'] });
    const { result } = await round(pair());
    expect(anthropic.requests.length - before).toBe(3);
    expect(result.provider).toBe('openai');
    expect(result.text).toBe('from the fallback');
    expect(result.fallbacks).toEqual([
      { provider: 'anthropic', reason: expect.stringMatching(/overloaded \(529\) after 3 attempts/) },
    ]);
  });

  it('switches at once, without retries, when the first is out of credit', async () => {
    const before = anthropic.requests.length;
    anthropic.queue.push({
      kind: 'error',
      status: 400,
      body: {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'Your credit balance is too low to access the Anthropic API.',
        },
      },
    });
    openai.queue.push({ kind: 'stream', text: ['ok'] });
    const { result } = await round(pair());
    expect(anthropic.requests.length - before).toBe(1);
    expect(result.fallbacks[0]).toMatchObject({
      provider: 'anthropic',
      reason: expect.stringMatching(/quota or billing/),
    });
  });

  it('treats OpenAI insufficient_quota as unavailable, not as a rate limit to wait out', async () => {
    const provider = new OpenAIProvider({
      name: 'openai',
      apiKey: 'k',
      model: 'm',
      baseURL: `${openai.url}/v1`,
      maxRetries: 3,
      retry: fastRetry,
    });
    const before = openai.requests.length;
    openai.queue.push({
      kind: 'error',
      status: 429,
      body: {
        error: { message: 'You exceeded your current quota', type: 'insufficient_quota', code: 'insufficient_quota' },
      },
    });
    await expect(round(provider)).rejects.toMatchObject({ name: 'ProviderUnavailableError' });
    expect(openai.requests.length - before).toBe(1);
  });
});

describe('provider configuration', () => {
  it('fails at startup with a clear message when the chosen provider has no key', () => {
    expect(() => loadConfig({ AI_PROVIDER: 'openrouter' })).toThrow(/OPENROUTER_API_KEY: is missing/);
  });

  it('sends OpenRouter requests to its base URL with its key', async () => {
    const fake = await startFakeOpenAI();
    try {
      fake.queue.push({ kind: 'stream', text: ['routed'] });
      const provider = createProvider(
        loadConfig({
          AI_PROVIDER: 'openrouter',
          OPENROUTER_API_KEY: 'sk-or-test',
          OPENROUTER_BASE_URL: `${fake.url}/api/v1`,
          OPENROUTER_MODEL: 'vendor/model',
        }),
      );
      const { result } = await round(provider);
      expect(result.provider).toBe('openrouter');
      expect(fake.requests[0]!.path).toBe('/api/v1/chat/completions');
      expect(fake.requests[0]!.headers.authorization).toBe('Bearer sk-or-test');
      expect(fake.requests[0]!.body.model).toBe('vendor/model');
    } finally {
      await fake.close();
    }
  });

  it('builds the fallback chain from AI_PROVIDER_FALLBACK', () => {
    const provider = createProvider(
      loadConfig({
        AI_PROVIDER: 'anthropic',
        ANTHROPIC_API_KEY: 'k',
        AI_PROVIDER_FALLBACK: 'openai',
        OPENAI_API_KEY: 'k2',
      }),
    );
    expect(provider).toBeInstanceOf(FallbackProvider);
    expect(provider.name).toBe('anthropic');
  });
});
