import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { blockTokens, createPromptCache } from '../../fakes/anthropic-prompt-cache.ts';
import { startFakeAnthropic } from '../../fakes/anthropic-server.ts';

const CC = { cache_control: { type: 'ephemeral' } };
const system = (text: string) => [{ type: 'text', text, ...CC }];
const user = (text: string, cached = false) => ({
  role: 'user',
  content: [{ type: 'text', text, ...(cached ? CC : {}) }],
});
const assistant = (text: string) => ({ role: 'assistant', content: [{ type: 'text', text }] });
const LONG = 'You are a careful operator. '.repeat(200); // ~1,400 tokens
const sys = blockTokens({ type: 'text', text: LONG });
const tok = (text: string) => blockTokens({ type: 'text', text });

describe('the fake Anthropic prompt cache', () => {
  it('writes a long enough prefix once and reads it on the identical next request', () => {
    const cache = createPromptCache();
    const body = { model: 'm', system: system(LONG), messages: [user('hi')] };
    expect(cache.account(body)).toEqual({ cacheRead: 0, cacheWrite: sys, input: tok('hi') });
    expect(cache.account(body)).toEqual({ cacheRead: sys, cacheWrite: 0, input: tok('hi') });
  });

  it('reads the previous request through the lookback when the breakpoint moves to the new end', () => {
    const cache = createPromptCache();
    const first = { model: 'm', system: system(LONG), messages: [user('question one', true)] };
    cache.account(first);
    const second = {
      model: 'm',
      system: system(LONG),
      messages: [user('question one'), assistant('answer one'), user('question two', true)],
    };
    expect(cache.account(second)).toEqual({
      cacheRead: sys + tok('question one'),
      cacheWrite: tok('answer one') + tok('question two'),
      input: 0,
    });
  });

  it('finds nothing more than 20 blocks back from a breakpoint', () => {
    const cache = createPromptCache({ minTokens: 1 });
    const opening = [user('start', true)];
    cache.account({ model: 'm', messages: opening });
    const turns = Array.from({ length: 11 }, (_, i) => [assistant(`a${i}`), user(`u${i}`)]).flat();
    const far = { model: 'm', messages: [user('start'), ...turns.slice(0, -1), user('u10', true)] };
    // 22 message blocks after the cached one: beyond the lookback, so all of it is written anew.
    expect(cache.account(far).cacheRead).toBe(0);
  });

  it('misses after one changed byte before the breakpoint (a timestamp in the system prompt)', () => {
    const cache = createPromptCache();
    cache.account({ model: 'm', system: system(`${LONG} Now: 10:00`), messages: [user('hi')] });
    expect(cache.account({ model: 'm', system: system(`${LONG} Now: 10:01`), messages: [user('hi')] }).cacheRead).toBe(
      0,
    );
  });

  it('does not cache a prefix below the minimum length, and forgets one after its ttl unless read', () => {
    let now = 0;
    const cache = createPromptCache({ minTokens: 1024, now: () => now });
    const short = { model: 'm', system: system('short'), messages: [user('hi')] };
    expect(cache.account(short)).toEqual({ cacheRead: 0, cacheWrite: 0, input: tok('short') + tok('hi') });
    expect(cache.account(short).cacheRead).toBe(0);
    const long = { model: 'm', system: system(LONG), messages: [user('hi')] };
    cache.account(long);
    now += 4 * 60_000;
    expect(cache.account(long).cacheRead).toBe(sys); // read at 4 min: lives 5 more minutes
    now += 4 * 60_000;
    expect(cache.account(long).cacheRead).toBe(sys);
    now += 6 * 60_000;
    expect(cache.account(long).cacheRead).toBe(0);
  });

  it('keys the cache by model too', () => {
    const cache = createPromptCache();
    cache.account({ model: 'a', system: system(LONG), messages: [user('hi')] });
    expect(cache.account({ model: 'b', system: system(LONG), messages: [user('hi')] }).cacheRead).toBe(0);
  });

  it('reports the bill through the real SDK, and leaves usage alone without caching', async () => {
    const fake = await startFakeAnthropic({ caching: true });
    const plain = await startFakeAnthropic();
    try {
      const usages = [];
      for (const url of [fake.url, fake.url, plain.url]) {
        const client = new Anthropic({ apiKey: 'k', baseURL: url, maxRetries: 0 });
        (url === fake.url ? fake : plain).enqueue({ kind: 'stream', text: ['ok'] });
        const stream = client.messages.stream({
          model: 'claude-sonnet-5-5',
          max_tokens: 10,
          system: [{ type: 'text', text: LONG, cache_control: { type: 'ephemeral' } }],
          messages: [{ role: 'user', content: 'hi' }],
        });
        usages.push((await stream.finalMessage()).usage);
      }
      expect(usages[0]).toMatchObject({ cache_creation_input_tokens: sys, cache_read_input_tokens: 0 });
      expect(usages[1]).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: sys });
      expect(usages[2]).toMatchObject({ input_tokens: 10, cache_read_input_tokens: 0 });
      expect(fake.billed.map((b) => b.cacheRead)).toEqual([0, sys]);
    } finally {
      await fake.close();
      await plain.close();
    }
  });
});
