import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../../../src/agent/model.ts';
import { PROVIDER_FAKES, startProviderFake, streamOf, watchRound, type ProviderFake } from './provider-matrix.ts';

const request: ModelRequest = {
  system: 'You are a test.',
  messages: [{ role: 'user', text: 'deploy api' }],
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

describe.each(PROVIDER_FAKES)('a round streamed from %s', (name) => {
  let model: ProviderFake;
  beforeAll(async () => {
    model = await startProviderFake(name);
  });
  afterAll(() => model.close());

  it('delivers text deltas to onText in the order they arrive', async () => {
    model.fake.enqueue(streamOf({ text: ['Dep', 'loy', 'ing ', 'now.'] }));
    const { result, deltas } = await watchRound(model.provider, request);
    expect(deltas).toEqual(['Dep', 'loy', 'ing ', 'now.']);
    expect(result.text).toBe('Deploying now.');
    expect(result.stopReason).toBe('end_turn');
  });

  it('assembles tool input whose JSON is split one character per delta', async () => {
    const json = '{"service": "api", "env": "prod", "replicas": 3}';
    model.fake.enqueue({ kind: 'stream', toolCalls: [{ id: 'call_9', name: 'deploy', json: json.split('') }] });
    const { result } = await watchRound(model.provider, request);
    expect(result.toolCalls).toEqual([
      { id: 'call_9', name: 'deploy', args: { service: 'api', env: 'prod', replicas: 3 } },
    ]);
    expect(result.stopReason).toBe('tool_use');
  });

  it('returns two parallel tool calls in the order the model made them', async () => {
    model.fake.enqueue(
      streamOf({
        text: ['Looking.'],
        toolCalls: [
          { id: 'a', name: 'status', args: { service: 'web' } },
          { id: 'b', name: 'status', args: { service: 'db' } },
        ],
      }),
    );
    const { result } = await watchRound(model.provider, request);
    expect(result.text).toBe('Looking.');
    expect(result.toolCalls.map((c) => [c.id, c.name, c.args])).toEqual([
      ['a', 'status', { service: 'web' }],
      ['b', 'status', { service: 'db' }],
    ]);
  });

  it('reports a round cut by the token limit as a max_tokens stop', async () => {
    model.fake.enqueue(streamOf({ text: ['cut sh'], stop: 'max_tokens' }));
    const { result } = await watchRound(model.provider, request);
    expect(result.stopReason).toBe('max_tokens');
    expect(result.text).toBe('cut sh');
  });

  it('turns tool JSON that does not parse into an argument error instead of throwing', async () => {
    model.fake.enqueue(streamOf({ toolCalls: [{ id: 'bad', name: 'deploy', rawArgs: '{"service": "ap' }] }));
    const { result } = await watchRound(model.provider, request);
    expect(result.toolCalls).toEqual([
      { id: 'bad', name: 'deploy', args: {}, argsError: expect.stringMatching(/invalid JSON/) },
    ]);
  });

  it('turns tool JSON that parses to a non-object into an argument error', async () => {
    model.fake.enqueue(streamOf({ toolCalls: [{ id: 'arr', name: 'deploy', rawArgs: '["api"]' }] }));
    const { result } = await watchRound(model.provider, request);
    expect(result.toolCalls[0]).toMatchObject({ args: {}, argsError: 'the arguments must be a JSON object' });
  });

  it('reports usage tokens, cache reads included', async () => {
    model.fake.enqueue(streamOf({ text: ['x'], usage: { input: 100, output: 20, cacheRead: 900 } }));
    const { result } = await watchRound(model.provider, request);
    expect(result.usage).toEqual({ inputTokens: 100, outputTokens: 20, cacheReadTokens: 900, cacheWriteTokens: 0 });
  });

  it('names the provider and model that answered, with no fallbacks', async () => {
    model.fake.enqueue(streamOf({ text: ['ok'] }));
    const { result } = await watchRound(model.provider, request);
    expect(result).toMatchObject({ provider: model.provider.name, model: model.provider.model, fallbacks: [] });
  });

  it('retries a stream cut mid-round, withdrawing its text and dropping its partial tool calls', async () => {
    const before = model.fake.requests.length;
    model.fake.enqueue(
      {
        ...streamOf({ text: ['Hello ', 'wor', 'ld'], toolCalls: [{ id: 'x', name: 'deploy', args: {} }] }),
        cutAfterEvents: 4,
      },
      streamOf({ text: ['Hello ', 'world'] }),
    );
    const { result, shown, restarts } = await watchRound(model.provider, request);
    expect(model.fake.requests.length - before).toBe(2);
    expect(restarts).toBe(1);
    expect(shown).toBe('Hello world');
    expect(result.text).toBe('Hello world');
    expect(result.toolCalls).toEqual([]);
  });

  it('does not restart a round that failed before any text was shown', async () => {
    model.fake.enqueue({ ...streamOf({ text: ['late'] }), cutAfterEvents: 1 }, streamOf({ text: ['fine'] }));
    const { shown, restarts } = await watchRound(model.provider, request);
    expect(restarts).toBe(0);
    expect(shown).toBe('fine');
  });

  it('retries an overload error sent inside a stream that had already started', async () => {
    // After two text deltas: Anthropic sends message_start, ping and content_block_start before text.
    const after = name === 'anthropic-fake' ? 5 : 3;
    model.fake.enqueue(
      { ...streamOf({ text: ['par', 'tial', 'ly'] }), errorAfterEvents: { after, type: 'overloaded' } },
      streamOf({ text: ['whole'] }),
    );
    const { result, shown, restarts } = await watchRound(model.provider, request);
    expect(restarts).toBe(1);
    expect(shown).toBe('whole');
    expect(result.text).toBe('whole');
  });

  it('stops promptly when aborted mid-stream and does not retry', async () => {
    const before = model.fake.requests.length;
    model.fake.enqueue({ ...streamOf({ text: Array.from({ length: 50 }, () => 'tick ') }), delayMs: 20 });
    const controller = new AbortController();
    const watched = model.provider.streamRound(
      request,
      { onText: () => controller.abort(new Error('the user cancelled')), onRoundRestart: () => {} },
      controller.signal,
    );
    await expect(watched).rejects.toThrow();
    expect(controller.signal.aborted).toBe(true);
    expect(model.fake.requests.length - before).toBe(1);
  });

  it('retries a stream that goes silent for longer than the idle limit', async () => {
    const quiet = await startProviderFake(name, {}, { retry: { sleep: async () => {}, streamIdleMs: 400 } });
    try {
      quiet.fake.enqueue({ ...streamOf({ text: ['too ', 'slow'] }), delayMs: 3_000 }, streamOf({ text: ['prompt'] }));
      const { result, shown } = await watchRound(quiet.provider, request);
      expect(result.text).toBe('prompt');
      expect(shown).toBe('prompt');
      expect(quiet.fake.requests).toHaveLength(2);
    } finally {
      await quiet.close();
    }
  });
});
