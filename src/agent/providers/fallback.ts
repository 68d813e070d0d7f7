import type { Logger } from 'pino';
import {
  ProviderUnavailableError,
  type ModelProvider,
  type ModelRequest,
  type ModelRound,
  type RoundCallbacks,
} from '../model.ts';

/**
 * Tries providers in order for each round: when one is out of quota or persistently overloaded, the
 * next answers that round. The switch is logged and recorded in the round (and so in the turn's record).
 */
export class FallbackProvider implements ModelProvider {
  readonly #providers: ModelProvider[];
  readonly #log: Logger | undefined;

  constructor(providers: ModelProvider[], log?: Logger) {
    if (providers.length === 0) throw new Error('FallbackProvider needs at least one provider');
    this.#providers = providers;
    this.#log = log;
  }

  get name(): string {
    return this.#providers[0]!.name;
  }

  get model(): string {
    return this.#providers[0]!.model;
  }

  async streamRound(request: ModelRequest, callbacks: RoundCallbacks, signal: AbortSignal): Promise<ModelRound> {
    const fallbacks: ModelRound['fallbacks'] = [];
    for (const [i, provider] of this.#providers.entries()) {
      try {
        const round = await provider.streamRound(request, callbacks, signal);
        return { ...round, fallbacks: [...fallbacks, ...round.fallbacks] };
      } catch (error) {
        const next = this.#providers[i + 1];
        if (!(error instanceof ProviderUnavailableError) || !next) throw error;
        fallbacks.push({ provider: provider.name, reason: error.message });
        this.#log?.warn(
          { from: provider.name, to: next.name, reason: error.message },
          'switching model provider for this round',
        );
      }
    }
    throw new Error('unreachable');
  }
}
