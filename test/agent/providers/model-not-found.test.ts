import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, testConfig } from '../../helpers/harness.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { createProvider } from '../../../src/agent/providers/index.ts';
import { ProviderUnavailableError, type ModelRequest } from '../../../src/agent/model.ts';
import { startFakeAnthropic } from '../../fakes/anthropic-server.ts';
import { startFakeOpenAI } from '../../fakes/openai-server.ts';
import type { StartedFakeModel } from '../../fakes/model-http.ts';
import { streamOf, watchRound } from './provider-matrix.ts';

/**
 * A model id the API does not serve (a typo, or a model retired since the configuration was written)
 * is a configuration problem: the error names the variable to fix, it is not retried, and a fallback
 * provider answers if one is configured. The fakes answer unknown models in each API's own words.
 */

const request: ModelRequest = {
  system: 'You are a test.',
  messages: [{ role: 'user', text: 'hello' }],
  tools: [],
  maxTokens: 64,
};

const notServed = (setting: string, model: string) =>
  new RegExp(
    `^${setting}=${model} is not a model this API serves \\(not found or retired\\): set ${setting} to a current model id`,
  );

describe('a model id the API does not serve', () => {
  let anthropic: StartedFakeModel;
  let openai: StartedFakeModel;
  let db: TestDatabase;
  beforeAll(async () => {
    anthropic = await startFakeAnthropic({ models: ['claude-current'] });
    openai = await startFakeOpenAI({ models: ['gpt-current'] });
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await anthropic.close();
    await openai.close();
    await db.drop();
  });

  /** The configured provider chain, built the way the app builds it. */
  const configured = (env: Record<string, string>) =>
    createProvider(
      testConfig(db.url, {
        ANTHROPIC_API_KEY: 'sk-ant-fake',
        ANTHROPIC_BASE_URL: anthropic.url,
        OPENAI_API_KEY: 'sk-fake',
        OPENAI_BASE_URL: `${openai.url}/v1`,
        OPENROUTER_API_KEY: 'sk-or-fake',
        OPENROUTER_BASE_URL: `${openai.url}/api/v1`,
        MODEL_MAX_RETRIES: '3',
        ...env,
      }),
    );
  const sentTo = (fake: StartedFakeModel) => {
    const before = fake.requests.length;
    return () => fake.requests.length - before;
  };

  it('names ANTHROPIC_MODEL when Anthropic answers 404 not_found_error, without retrying', async () => {
    const sent = sentTo(anthropic);
    const provider = configured({ AI_PROVIDER: 'anthropic', ANTHROPIC_MODEL: 'claude-retired' });
    const failure = watchRound(provider, request);
    await expect(failure).rejects.toThrow(notServed('ANTHROPIC_MODEL', 'claude-retired'));
    await expect(failure).rejects.toBeInstanceOf(ProviderUnavailableError);
    expect(sent()).toBe(1);
  });

  it('names OPENAI_MODEL when OpenAI answers 404 model_not_found, without retrying', async () => {
    const sent = sentTo(openai);
    const provider = configured({ AI_PROVIDER: 'openai', OPENAI_MODEL: 'gpt-retired' });
    await expect(watchRound(provider, request)).rejects.toThrow(notServed('OPENAI_MODEL', 'gpt-retired'));
    expect(sent()).toBe(1);
  });

  it('names OPENROUTER_MODEL when OpenRouter answers 400 "is not a valid model ID"', async () => {
    const sent = sentTo(openai);
    openai.enqueue({
      kind: 'error',
      status: 400,
      body: { error: { message: 'vendor/retired-model is not a valid model ID', code: 400 } },
    });
    const provider = configured({ AI_PROVIDER: 'openrouter', OPENROUTER_MODEL: 'vendor/retired-model' });
    await expect(watchRound(provider, request)).rejects.toThrow(notServed('OPENROUTER_MODEL', 'vendor/retired-model'));
    expect(sent()).toBe(1);
  });

  it('lets AI_PROVIDER_FALLBACK answer the round, recording why', async () => {
    openai.enqueue(streamOf({ text: ['from the fallback'] }));
    const provider = configured({
      AI_PROVIDER: 'anthropic',
      ANTHROPIC_MODEL: 'claude-retired',
      AI_PROVIDER_FALLBACK: 'openai',
      OPENAI_MODEL: 'gpt-current',
    });
    const { result, shown } = await watchRound(provider, request);
    expect(shown).toBe('from the fallback');
    expect(result.provider).toBe('openai');
    expect(result.fallbacks).toEqual([{ provider: 'anthropic', reason: expect.stringMatching(/^ANTHROPIC_MODEL=/) }]);
  });

  it('still treats a 404 that names no model (a wrong base URL) as a plain failure', async () => {
    anthropic.enqueue({ kind: 'error', status: 404, body: 'Not Found' });
    const provider = configured({ AI_PROVIDER: 'anthropic', ANTHROPIC_MODEL: 'claude-current' });
    const failure = watchRound(provider, request);
    await expect(failure).rejects.toMatchObject({ status: 404 });
    await expect(failure).rejects.not.toBeInstanceOf(ProviderUnavailableError);
  });

  it('ends the turn with an error that says which variable to change', async () => {
    const h = await startHarness({
      db,
      provider: configured({ AI_PROVIDER: 'anthropic', ANTHROPIC_MODEL: 'claude-retired' }),
    });
    try {
      const item = await h.say('retired-model', 'hello');
      const settled = await h.settled(item.id);
      expect(settled.status).toBe('failed');
      expect(h.outbound.channelText('retired-model').at(-1)).toMatch(
        /ANTHROPIC_MODEL=claude-retired is not a model this API serves \(not found or retired\): set ANTHROPIC_MODEL to a current model id/,
      );
    } finally {
      await h.stop();
    }
  });
});
