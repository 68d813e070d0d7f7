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
 * next answers that round. The switch is logged and recorded in the round (and so in the turn's
 * record); the next round starts again with the first provider, which may have recovered.
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

  get models(): readonly string[] {
    return this.#providers.flatMap((p) => p.models ?? [p.model]);
  }

  /** The chain, in the order it is tried. */
  get providers(): readonly ModelProvider[] {
    return this.#providers;
  }

  async streamRound(request: ModelRequest, callbacks: RoundCallbacks, signal: AbortSignal): Promise<ModelRound> {
    const fallbacks: ModelRound['fallbacks'] = [];
    for (const [i, provider] of this.#providers.entries()) {
      // Text the failing provider showed and did not withdraw itself must go before the next one streams.
      let shown = false;
      const tracked: RoundCallbacks = {
        onText: (delta) => {
          shown = true;
          callbacks.onText(delta);
        },
        onRoundRestart: () => {
          shown = false;
          callbacks.onRoundRestart();
        },
        onUsage: (usage, model) => callbacks.onUsage?.(usage, model),
        onAttemptFailed: () => callbacks.onAttemptFailed?.(),
        onOutputBytes: (bytes) => callbacks.onOutputBytes?.(bytes),
      };
      try {
        const round = await provider.streamRound(request, tracked, signal);
        return { ...round, fallbacks: [...fallbacks, ...round.fallbacks] };
      } catch (error) {
        const next = this.#providers[i + 1];
        if (!(error instanceof ProviderUnavailableError) || !next || signal.aborted) throw error;
        if (shown) callbacks.onRoundRestart();
        fallbacks.push({ provider: provider.name, reason: error.message });
        this.#log?.warn(
          { from: provider.name, to: next.name, model: next.model, reason: error.message },
          'switching model provider for this round',
        );
      }
    }
    throw new Error('unreachable: the last provider either answers or throws');
  }
}
