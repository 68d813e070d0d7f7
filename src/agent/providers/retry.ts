import type { Logger } from 'pino';
import { ProviderUnavailableError, type RoundCallbacks } from '../model.ts';
import { metrics } from '../../metrics.ts';
import { classifyFailure } from './errors.ts';

export interface RetryOptions {
  provider: string;
  maxRetries: number;
  signal: AbortSignal;
  log?: Logger;
  /** Injectable for tests. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  baseDelayMs?: number;
}

export const abortableSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });

/**
 * Runs one model round, retrying 429, overload, 5xx and dropped connections with exponential
 * backoff and jitter that honours retry-after. Text delivered by a failed attempt is withdrawn
 * (onRoundRestart) before the next. Quota errors, and overload that outlasts the retries, become
 * ProviderUnavailableError so a fallback provider can take the round.
 */
export async function withRetries<T>(
  options: RetryOptions,
  callbacks: RoundCallbacks,
  attempt: (callbacks: RoundCallbacks) => Promise<T>,
): Promise<T> {
  const sleep = options.sleep ?? abortableSleep;
  const base = options.baseDelayMs ?? 500;
  for (let n = 0; ; n++) {
    let delivered = false;
    const tracked: RoundCallbacks = {
      onText: (delta) => {
        delivered = true;
        callbacks.onText(delta);
      },
      onRoundRestart: () => callbacks.onRoundRestart(),
    };
    try {
      return await attempt(tracked);
    } catch (error) {
      if (options.signal.aborted) throw error;
      const failure = classifyFailure(error);
      if (failure.kind === 'fatal') throw error;
      if (delivered) callbacks.onRoundRestart();
      if (failure.kind === 'unavailable')
        throw new ProviderUnavailableError(options.provider, failure.reason, { cause: error });
      if (n >= options.maxRetries) {
        if (failure.overload) {
          throw new ProviderUnavailableError(options.provider, `still ${failure.reason} after ${n + 1} attempts`, {
            cause: error,
          });
        }
        throw error;
      }
      const backoff = Math.min(30_000, base * 2 ** n) * (0.5 + Math.random() / 2);
      const wait = failure.retryAfterMs !== undefined ? Math.max(failure.retryAfterMs, 0) : backoff;
      metrics.modelRetries.inc({ provider: options.provider, reason: failure.reason.split(' ')[0] ?? 'unknown' });
      options.log?.warn(
        { provider: options.provider, reason: failure.reason, attempt: n + 1, waitMs: Math.round(wait) },
        'retrying model round',
      );
      await sleep(wait, options.signal);
    }
  }
}
