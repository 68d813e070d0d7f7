import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ProviderUnavailableError,
  ZERO_USAGE,
  type ModelProvider,
  type ModelRequest,
} from '../../../src/agent/model.ts';
import { FallbackProvider } from '../../../src/agent/providers/fallback.ts';
import { startProviderFake, streamOf, watchRound, type ProviderFake } from './provider-matrix.ts';

const request: ModelRequest = {
  system: 'You are a test.',
  messages: [{ role: 'user', text: 'hello' }],
  tools: [],
  maxTokens: 64,
};

const creditTooLow = {
  kind: 'error' as const,
  status: 400,
  body: {
    type: 'error',
    error: { type: 'invalid_request_error', message: 'Your credit balance is too low to access the Anthropic API.' },
  },
};

/** A provider that streams some text and then reports itself unavailable without withdrawing it. */
function unavailableAfterText(text: string): ModelProvider {
  return {
    name: 'flaky',
    model: 'flaky-1',
    async streamRound(_request, callbacks) {
      callbacks.onText(text);
      throw new ProviderUnavailableError('flaky', 'out of credit');
    },
  };
}

const answering: ModelProvider = {
  name: 'steady',
  model: 'steady-1',
  async streamRound(_request, callbacks) {
    callbacks.onText('from steady');
    return {
      text: 'from steady',
      toolCalls: [],
      stopReason: 'end_turn',
      usage: ZERO_USAGE,
      provider: 'steady',
      model: 'steady-1',
      fallbacks: [],
    };
  },
};

describe('falling back between providers', () => {
  let anthropic: ProviderFake;
  let openai: ProviderFake;
  let logLines: Array<Record<string, unknown>>;
  let chain: FallbackProvider;
  beforeAll(async () => {
    anthropic = await startProviderFake('anthropic-fake', {}, { maxRetries: 2 });
    openai = await startProviderFake('openai-fake', {}, { maxRetries: 0 });
  });
  afterAll(async () => {
    await anthropic.close();
    await openai.close();
  });
  beforeEach(() => {
    logLines = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    chain = new FallbackProvider([anthropic.provider, openai.provider], pino({}, sink));
  });
  const sent = (fake: ProviderFake) => {
    const before = fake.fake.requests.length;
    return () => fake.fake.requests.length - before;
  };

  it('lets the next provider answer when the first stays overloaded (529) through its retries', async () => {
    const toAnthropic = sent(anthropic);
    for (let i = 0; i < 3; i++) anthropic.fake.enqueue({ kind: 'error', status: 529, body: 'Overloaded' });
    openai.fake.enqueue(streamOf({ text: ['from the fallback'] }));
    const { result, shown } = await watchRound(chain, request);
    expect(toAnthropic()).toBe(3);
    expect(shown).toBe('from the fallback');
    expect(result).toMatchObject({
      provider: 'openai',
      model: 'gpt-fake',
      fallbacks: [{ provider: 'anthropic', reason: expect.stringMatching(/overloaded \(529\) after 3 attempts/) }],
    });
  });

  it('switches at once, without retries, when the first is out of credit', async () => {
    const toAnthropic = sent(anthropic);
    anthropic.fake.enqueue(creditTooLow);
    openai.fake.enqueue(streamOf({ text: ['ok'] }));
    const { result } = await watchRound(chain, request);
    expect(toAnthropic()).toBe(1);
    expect(result.fallbacks).toEqual([{ provider: 'anthropic', reason: expect.stringMatching(/quota or billing/) }]);
  });

  it('logs the switch with both providers and the reason', async () => {
    anthropic.fake.enqueue(creditTooLow);
    openai.fake.enqueue(streamOf({ text: ['ok'] }));
    await watchRound(chain, request);
    expect(logLines).toContainEqual(
      expect.objectContaining({
        from: 'anthropic',
        to: 'openai',
        reason: expect.stringMatching(/credit balance/),
        msg: 'switching model provider for this round',
      }),
    );
  });

  it('withdraws the failed provider’s text once before the next provider streams', async () => {
    // Overloaded after "Hel" (message_start, ping, block start, one delta) with no retries left.
    const failing = await startProviderFake('anthropic-fake', {}, { maxRetries: 0 });
    try {
      failing.fake.enqueue({
        ...streamOf({ text: ['Hel', 'lo'] }),
        errorAfterEvents: { after: 4, type: 'overloaded' },
      });
      openai.fake.enqueue(streamOf({ text: ['Hi there'] }));
      const { result, shown, restarts } = await watchRound(
        new FallbackProvider([failing.provider, openai.provider]),
        request,
      );
      expect(restarts).toBe(1);
      expect(shown).toBe('Hi there');
      expect(result.provider).toBe('openai');
    } finally {
      await failing.close();
    }
  });

  it('withdraws text a provider showed before reporting itself unavailable', async () => {
    const { shown, restarts, result } = await watchRound(
      new FallbackProvider([unavailableAfterText('half a sen'), answering]),
      request,
    );
    expect(restarts).toBe(1);
    expect(shown).toBe('from steady');
    expect(result.fallbacks).toEqual([{ provider: 'flaky', reason: 'out of credit' }]);
  });

  it('does not fall back on an error that another provider would not fix', async () => {
    const toOpenAI = sent(openai);
    anthropic.fake.enqueue({ kind: 'error', status: 400, body: 'messages: roles must alternate' });
    await expect(watchRound(chain, request)).rejects.toMatchObject({ status: 400 });
    expect(toOpenAI()).toBe(0);
  });

  it('reports the last provider’s failure when every provider is unavailable', async () => {
    anthropic.fake.enqueue(creditTooLow);
    openai.fake.enqueue({ kind: 'error', status: 402, body: 'Insufficient credits' });
    const failure = watchRound(chain, request);
    await expect(failure).rejects.toBeInstanceOf(ProviderUnavailableError);
    await expect(failure).rejects.toMatchObject({ provider: 'openai' });
  });

  it('starts the next round with the first provider again', async () => {
    anthropic.fake.enqueue(creditTooLow);
    openai.fake.enqueue(streamOf({ text: ['fallback'] }));
    await watchRound(chain, request);
    anthropic.fake.enqueue(streamOf({ text: ['primary is back'] }));
    const { result } = await watchRound(chain, request);
    expect(result).toMatchObject({ provider: 'anthropic', text: 'primary is back', fallbacks: [] });
  });

  it('is named after the first provider, which it prefers', () => {
    expect([chain.name, chain.model]).toEqual(['anthropic', 'claude-fake']);
  });
});
