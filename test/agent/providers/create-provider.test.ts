import { afterEach, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../../../src/agent/model.ts';
import { FallbackProvider } from '../../../src/agent/providers/fallback.ts';
import { createProvider } from '../../../src/agent/providers/index.ts';
import { ScriptedProvider } from '../../../src/agent/providers/scripted.ts';
import { loadConfig, type Config } from '../../../src/config.ts';
import { startFakeOpenAI } from '../../fakes/openai-server.ts';
import type { StartedFakeModel } from '../../fakes/model-http.ts';
import { streamOf, watchRound } from './provider-matrix.ts';

const request: ModelRequest = {
  system: 'You are a test.',
  messages: [{ role: 'user', text: 'hello' }],
  tools: [],
  maxTokens: 64,
};

/** A config as validation would produce it, then changed the way a caller could bypass validation. */
function configWith(overrides: Partial<Config>): Config {
  return { ...loadConfig({ AI_PROVIDER: 'scripted' }), ...overrides };
}

let fake: StartedFakeModel | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

describe('createProvider', () => {
  it('refuses at startup a provider without its key, saying which variable to set', () => {
    expect(() => createProvider(configWith({ AI_PROVIDER: 'anthropic' }))).toThrow(
      'ANTHROPIC_API_KEY is missing: AI_PROVIDER uses anthropic, which needs an API key. Set ANTHROPIC_API_KEY, or choose another provider in AI_PROVIDER.',
    );
  });

  it('names AI_PROVIDER_FALLBACK when the fallback provider lacks its key', () => {
    expect(() =>
      createProvider(
        configWith({ AI_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'k', AI_PROVIDER_FALLBACK: ['openrouter'] }),
      ),
    ).toThrow(/OPENROUTER_API_KEY is missing: AI_PROVIDER_FALLBACK uses openrouter/);
  });

  it('is backed by configuration validation that reports the missing key first', () => {
    expect(() => loadConfig({ AI_PROVIDER: 'openrouter' })).toThrow(/OPENROUTER_API_KEY: is missing/);
  });

  it('sends OpenRouter requests to its base URL with its key, model and app title', async () => {
    fake = await startFakeOpenAI();
    fake.enqueue(streamOf({ text: ['routed'] }));
    const provider = createProvider(
      loadConfig({
        AI_PROVIDER: 'openrouter',
        OPENROUTER_API_KEY: 'sk-or-test',
        OPENROUTER_BASE_URL: `${fake.url}/api/v1`,
        OPENROUTER_MODEL: 'vendor/model',
      }),
    );
    const { result } = await watchRound(provider, request);
    expect(result).toMatchObject({ provider: 'openrouter', model: 'vendor/model', text: 'routed' });
    const sent = fake.requests[0]!;
    expect(sent.path).toBe('/api/v1/chat/completions');
    expect(sent.headers.authorization).toBe('Bearer sk-or-test');
    expect(sent.headers['x-title']).toBe('Countersign');
    expect(sent.body).toMatchObject({ model: 'vendor/model', max_tokens: 64 });
  });

  it('talks to a local OpenAI-compatible server that needs no key', async () => {
    fake = await startFakeOpenAI();
    fake.enqueue(streamOf({ text: ['local'] }));
    const provider = createProvider(
      loadConfig({ AI_PROVIDER: 'openai', OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_MODEL: 'llama3.1' }),
    );
    const { result } = await watchRound(provider, request);
    expect(result).toMatchObject({ provider: 'openai', model: 'llama3.1', text: 'local' });
    expect(fake.requests[0]!.headers.authorization).toMatch(/^Bearer \S+/);
  });

  it('builds the fallback chain from AI_PROVIDER then AI_PROVIDER_FALLBACK, without repeats', () => {
    const provider = createProvider(
      loadConfig({
        AI_PROVIDER: 'anthropic',
        ANTHROPIC_API_KEY: 'k',
        AI_PROVIDER_FALLBACK: 'openai,anthropic,openrouter',
        OPENAI_API_KEY: 'k2',
        OPENROUTER_API_KEY: 'k3',
      }),
    );
    expect(provider).toBeInstanceOf(FallbackProvider);
    expect((provider as FallbackProvider).providers.map((p) => p.name)).toEqual(['anthropic', 'openai', 'openrouter']);
  });

  it('returns the single provider itself when there is no fallback', () => {
    expect(createProvider(loadConfig({ AI_PROVIDER: 'scripted' }))).toBeInstanceOf(ScriptedProvider);
  });
});
