import type { Logger } from 'pino';
import type { Config, Provider } from '../../config.ts';
import type { ModelProvider } from '../model.ts';
import { AnthropicProvider } from './anthropic.ts';
import { FallbackProvider } from './fallback.ts';
import { OpenAIProvider } from './openai.ts';
import { loadScript, ScriptedProvider } from './scripted.ts';

/** Extra request headers OpenRouter uses to attribute traffic to an app (optional, harmless elsewhere). */
const OPENROUTER_HEADERS = { 'X-Title': 'Countersign' };

function single(config: Config, name: Provider, log?: Logger): ModelProvider {
  const setting = name === config.AI_PROVIDER ? 'AI_PROVIDER' : 'AI_PROVIDER_FALLBACK';
  const missing = (variable: string, alternative = '') =>
    new Error(
      `${variable} is missing: ${setting} uses ${name}, which needs an API key. Set ${variable}${alternative}, or choose another provider in ${setting}.`,
    );
  switch (name) {
    case 'scripted':
      return new ScriptedProvider(config.SCRIPTED_MODEL_SCRIPT ? loadScript(config.SCRIPTED_MODEL_SCRIPT) : undefined);
    case 'anthropic':
      if (!config.ANTHROPIC_API_KEY) throw missing('ANTHROPIC_API_KEY');
      return new AnthropicProvider({
        apiKey: config.ANTHROPIC_API_KEY,
        model: config.ANTHROPIC_MODEL,
        modelSetting: 'ANTHROPIC_MODEL',
        baseURL: config.ANTHROPIC_BASE_URL,
        maxRetries: config.MODEL_MAX_RETRIES,
        log,
        promptCache: config.PROMPT_CACHE,
      });
    case 'openai':
      if (!config.OPENAI_API_KEY && !config.OPENAI_BASE_URL)
        throw missing('OPENAI_API_KEY', ' (or OPENAI_BASE_URL for a local server that needs none)');
      return new OpenAIProvider({
        name: 'openai',
        // Local servers (Ollama, vLLM, LM Studio, llama.cpp) take any key.
        apiKey: config.OPENAI_API_KEY ?? 'not-needed',
        model: config.OPENAI_MODEL,
        modelSetting: 'OPENAI_MODEL',
        baseURL: config.OPENAI_BASE_URL,
        maxRetries: config.MODEL_MAX_RETRIES,
        vision: config.OPENAI_VISION,
        log,
      });
    case 'openrouter':
      if (!config.OPENROUTER_API_KEY) throw missing('OPENROUTER_API_KEY');
      return new OpenAIProvider({
        name: 'openrouter',
        apiKey: config.OPENROUTER_API_KEY,
        model: config.OPENROUTER_MODEL,
        modelSetting: 'OPENROUTER_MODEL',
        baseURL: config.OPENROUTER_BASE_URL,
        maxRetries: config.MODEL_MAX_RETRIES,
        vision: config.OPENROUTER_VISION,
        headers: OPENROUTER_HEADERS,
        log,
      });
  }
}

/** Builds the configured model provider (with its fallbacks). Fails at startup, not on the first message. */
export function createProvider(config: Config, log?: Logger): ModelProvider {
  const names = [config.AI_PROVIDER, ...config.AI_PROVIDER_FALLBACK.filter((p) => p !== config.AI_PROVIDER)];
  const providers = names.map((name) => single(config, name, log));
  return providers.length === 1 ? providers[0]! : new FallbackProvider(providers, log);
}
