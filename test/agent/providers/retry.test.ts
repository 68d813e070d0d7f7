import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ProviderUnavailableError, type ModelRequest } from '../../../src/agent/model.ts';
import { AnthropicProvider } from '../../../src/agent/providers/anthropic.ts';
import { classifyFailure, retryAfterMs } from '../../../src/agent/providers/errors.ts';
import { backoffMs, RETRY_LIMITS, type RetryTuning } from '../../../src/agent/providers/retry.ts';
import { PROVIDER_FAKES, startProviderFake, streamOf, watchRound, type ProviderFake } from './provider-matrix.ts';

const request: ModelRequest = {
  system: 'You are a test.',
  messages: [{ role: 'user', text: 'hello' }],
  tools: [],
  maxTokens: 64,
};

/** Records each wait instead of sleeping, so delays are asserted exactly and the suite stays fast. */
const waits: number[] = [];
const recordedSleep: RetryTuning = { sleep: async (ms) => void waits.push(ms), baseDelayMs: 100, random: () => 0.5 };

describe.each(PROVIDER_FAKES)('retries against %s', (name) => {
  let model: ProviderFake;
  beforeAll(async () => {
    model = await startProviderFake(name, {}, { maxRetries: 2, retry: recordedSleep });
  });
  afterAll(() => model.close());
  beforeEach(() => {
    waits.length = 0;
    model.fake.queue.length = 0;
  });
  const sent = () => {
    const before = model.fake.requests.length;
    return () => model.fake.requests.length - before;
  };

  it('waits the retry-after a 429 gave, then succeeds', async () => {
    const count = sent();
    model.fake.enqueue(
      { kind: 'error', status: 429, body: 'slow down', headers: { 'retry-after': '2' } },
      streamOf({ text: ['fine'] }),
    );
    const { result } = await watchRound(model.provider, request);
    expect(result.text).toBe('fine');
    expect(waits).toEqual([2000]);
    expect(count()).toBe(2);
  });

  it('prefers retry-after-ms to retry-after', async () => {
    model.fake.enqueue(
      { kind: 'error', status: 429, body: 'slow down', headers: { 'retry-after-ms': '250', 'retry-after': '9' } },
      streamOf({ text: ['fine'] }),
    );
    await watchRound(model.provider, request);
    expect(waits).toEqual([250]);
  });

  it('backs off exponentially on server errors when no retry-after is given', async () => {
    model.fake.enqueue(
      { kind: 'error', status: 500, body: 'boom' },
      { kind: 'error', status: 502, body: 'bad gateway' },
      streamOf({ text: ['fine'] }),
    );
    const { result } = await watchRound(model.provider, request);
    expect(result.text).toBe('fine');
    // base 100 ms doubling, equal jitter at random() = 0.5: 75 ms, then 150 ms.
    expect(waits).toEqual([75, 150]);
  });

  it('gives up on persistent overload with ProviderUnavailableError after MODEL_MAX_RETRIES retries', async () => {
    const count = sent();
    const status = name === 'anthropic-fake' ? 529 : 503;
    for (let i = 0; i < 3; i++) model.fake.enqueue({ kind: 'error', status, body: 'Overloaded' });
    const failure = watchRound(model.provider, request);
    await expect(failure).rejects.toBeInstanceOf(ProviderUnavailableError);
    await expect(failure).rejects.toThrow(/after 3 attempts/);
    expect(count()).toBe(3);
  });

  it('does not wait out a retry-after longer than a person should wait: the provider is unavailable', async () => {
    const count = sent();
    model.fake.enqueue({ kind: 'error', status: 429, body: 'slow down', headers: { 'retry-after': '3600' } });
    await expect(watchRound(model.provider, request)).rejects.toThrow(/asked to wait 3600 s/);
    expect(waits).toEqual([]);
    expect(count()).toBe(1);
  });

  it('fails at once, without retrying, on a request the API rejects', async () => {
    const count = sent();
    model.fake.enqueue({ kind: 'error', status: 400, body: 'max_tokens: must be positive' });
    const failure = watchRound(model.provider, request);
    await expect(failure).rejects.toMatchObject({ status: 400 });
    await expect(failure).rejects.not.toBeInstanceOf(ProviderUnavailableError);
    expect(count()).toBe(1);
  });

  it('leaves retrying to us: the SDK sends one request per attempt', async () => {
    model.fake.enqueue({ kind: 'error', status: 500, body: 'boom' }, streamOf({ text: ['ok'] }));
    const count = sent();
    await watchRound(model.provider, request);
    expect(count()).toBe(2);
    expect(model.fake.requests.at(-1)!.headers['x-stainless-retry-count']).toBe('0');
  });

  it('stops retrying when the round is aborted during a backoff', async () => {
    const controller = new AbortController();
    const cancelling = await startProviderFake(
      name,
      {},
      {
        maxRetries: 3,
        retry: {
          sleep: async (_ms, signal) => {
            controller.abort(new Error('cancelled'));
            signal.throwIfAborted();
          },
        },
      },
    );
    try {
      cancelling.fake.enqueue({ kind: 'error', status: 503, body: 'busy' }, streamOf({ text: ['never'] }));
      await expect(watchRound(cancelling.provider, request, controller.signal)).rejects.toThrow('cancelled');
      expect(cancelling.fake.requests).toHaveLength(1);
    } finally {
      await cancelling.close();
    }
  });
});

describe('dropped connections', () => {
  let refusedUrl: string;
  beforeAll(async () => {
    // A port that was just listening and is now closed: connections are refused.
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    refusedUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('retries a refused connection and then reports the provider unavailable, naming the host', async () => {
    waits.length = 0;
    const provider = new AnthropicProvider({
      apiKey: 'k',
      model: 'm',
      baseURL: refusedUrl,
      maxRetries: 2,
      retry: recordedSleep,
    });
    await expect(watchRound(provider, request)).rejects.toThrow(
      `could not reach the model at ${new URL(refusedUrl).host}: connection refused (3 attempts)`,
    );
    expect(waits).toHaveLength(2);
  });
});

describe('classifying failures', () => {
  it.each([
    [
      'OpenAI insufficient_quota (a 429 that waiting cannot fix)',
      {
        status: 429,
        error: { type: 'insufficient_quota', code: 'insufficient_quota' },
        message: '429 You exceeded your current quota',
      },
    ],
    [
      'OpenAI billing_hard_limit_reached',
      { status: 400, error: { code: 'billing_hard_limit_reached' }, message: 'Billing hard limit has been reached' },
    ],
    ['a gateway RESOURCE_EXHAUSTED', { status: 429, message: 'RESOURCE_EXHAUSTED: quota' }],
    [
      'Anthropic credit balance too low',
      {
        status: 400,
        error: {
          type: 'error',
          error: {
            type: 'invalid_request_error',
            message: 'Your credit balance is too low to access the Anthropic API.',
          },
        },
        message: '400 Your credit balance is too low',
      },
    ],
    [
      'Anthropic spend limit',
      {
        status: 429,
        error: {
          type: 'error',
          error: { type: 'rate_limit_error', details: { error_code: 'enforced_spend_limit_reached' } },
        },
        message: '429 limit',
      },
    ],
    ['OpenRouter 402 insufficient credits', { status: 402, message: '402 Insufficient credits' }],
  ])('treats %s as the provider being unavailable', (_label, error) => {
    expect(classifyFailure(error).kind).toBe('unavailable');
  });

  it.each([
    ['429', { status: 429 }],
    ['529 overloaded', { status: 529 }],
    ['503', { status: 503 }],
    ['500', { status: 500 }],
    [
      'an overloaded_error event inside a stream',
      { error: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } },
    ],
    [
      'an OpenRouter mid-stream error with a status in its code',
      { error: { message: 'Provider disconnected', code: 502 } },
    ],
    ['ECONNRESET', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    ['a premature close', new TypeError('terminated')],
  ])('retries %s', (_label, error) => {
    expect(classifyFailure(error).kind).toBe('retry');
  });

  it.each([
    ['401', { status: 401, message: 'invalid x-api-key' }],
    ['400', { status: 400, message: 'messages: field required' }],
    ['an abort', Object.assign(new Error('Request was aborted.'), { name: 'APIUserAbortError' })],
  ])('does not retry %s', (_label, error) => {
    expect(classifyFailure(error).kind).toBe('fatal');
  });

  it('reads retry-after given as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs({ 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' }, now)).toBe(30_000);
  });

  it('never backs off longer than the cap, however many retries', () => {
    expect(backoffMs(30, 500, () => 0.999)).toBeLessThanOrEqual(RETRY_LIMITS.maxBackoffMs);
  });
});
