import type { Config } from '../../config.ts';
import type { ModelProvider } from '../model.ts';
import { loadScript, ScriptedProvider } from './scripted.ts';

/** Builds the configured model provider. Fails at startup, not on the first message, when it can't. */
export function createProvider(config: Config): ModelProvider {
  switch (config.AI_PROVIDER) {
    case 'scripted':
      return new ScriptedProvider(config.SCRIPTED_MODEL_SCRIPT ? loadScript(config.SCRIPTED_MODEL_SCRIPT) : undefined);
    default:
      throw new Error(`AI_PROVIDER=${config.AI_PROVIDER} is not available in this build yet`);
  }
}
