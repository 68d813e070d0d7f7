import type { Logger } from 'pino';
import { ProviderUnavailableError, type RoundCallbacks } from '../model.ts';
import { metrics } from '../../metrics.ts';
import { markOrigin } from '../../db/errors.ts';
import { backoffDelayMs, retryWithBackoff } from '../../retry/backoff.ts';
import { classifyFailure, ModelNotServedError } from './errors.ts';

export const RETRY_LIMITS = {
  /** First backoff; it doubles on each attempt. */
  baseDelayMs: 500,
  /** Longest backoff between two attempts. */
  maxBackoffMs: 30_000,
  /**
   * A server asking for a longer pause than this is treated as unavailable: a person is waiting in
   * a chat, so a fallback provider (or a clear error) beats a silent minute-long stall.
   */
  maxRetryAfterMs: 60_000,
  /** Silence after which a stream counts as dropped; Anthropic pings and OpenRouter comments come far more often. */
  streamIdleMs: 90_000,
} as const;

export interface RetryOptions {
  provider: string;
  /** The model id asked for, and the variable that set it, for a "model not found" error. */
  model?: string;
  modelSetting?: string;
  /** The host the provider talks to, for "could not reach the model at …". */
  host?: string;
  /** Retries after the first attempt (MODEL_MAX_RETRIES). */
  maxRetries: number;
  signal: AbortSignal;
  log?: Logger;
  /** Injectable so tests observe the waits instead of sleeping through them. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  baseDelayMs?: number;
  /** Injectable jitter source in [0, 1). */
  random?: () => number;
}

/** What a provider's constructor accepts to tune its retries (tests make them instant). */
export type RetryTuning = Pick<RetryOptions, 'sleep' | 'baseDelayMs' | 'random'> & {
  /** Default RETRY_LIMITS.streamIdleMs. */
  streamIdleMs?: number;
};

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
 * Exponential backoff with "equal jitter": half the delay is fixed, half random, so many
 * conversations hitting one rate limit do not all come back at the same instant.
 */
export function backoffMs(retry: number, baseDelayMs: number, random: () => number = Math.random): number {
  return equalJitter(backoffDelayMs(retry + 1, baseDelayMs, RETRY_LIMITS.maxBackoffMs), random);
}

function equalJitter(ceilingMs: number, random: () => number = Math.random): number {
  return ceilingMs / 2 + (ceilingMs / 2) * random();
}

/**
 * Runs one model round, retrying 429, overload, 5xx and dropped connections with exponential
 * backoff and jitter that honours retry-after. Text delivered by a failed attempt is withdrawn
 * (onRoundRestart) before the next. Quota errors, and transient failures that outlast the retries,
 * become ProviderUnavailableError so a fallback provider can take the round.
 */
async function withRetries<T>(
  options: RetryOptions,
  callbacks: RoundCallbacks,
  attempt: (callbacks: RoundCallbacks) => Promise<T>,
): Promise<T> {
  // Each attempt gets its own tracker, so a late callback of a failed attempt cannot mark the next one.
  let delivered = () => false;
  return retryWithBackoff(
    () => {
      const tracker = trackDelivery(callbacks);
      delivered = tracker.delivered;
      return attempt(tracker.tracked);
    },
    {
      firstDelayMs: options.baseDelayMs ?? RETRY_LIMITS.baseDelayMs,
      maxDelayMs: RETRY_LIMITS.maxBackoffMs,
      signal: options.signal,
      sleep: (ms) => (options.sleep ?? abortableSleep)(ms, options.signal),
      onFailure: (caught, { attempt: n, delayMs }) => {
        // Whatever comes next (a retry, a fallback, or the error itself), this attempt's bill stands.
        callbacks.onAttemptFailed?.();
        // Whatever a model call throws came from the provider's HTTP client, whatever its code says: a
        // host that does not resolve (ENOTFOUND) is not the database being away (src/db/errors.ts).
        const error = markOrigin(caught, 'service');
        const failure = classifyFailure(error);
        if (failure.kind === 'fatal') throw error;
        // Whoever answers next (this provider again, or a fallback) streams the round from the start.
        if (delivered()) callbacks.onRoundRestart();
        const unavailable = (reason: string) =>
          markOrigin(new ProviderUnavailableError(options.provider, reason, { cause: error }), 'service');
        if (failure.kind === 'unavailable') throw unavailable(failure.reason);
        if (failure.kind === 'model_not_found') {
          throw new ModelNotServedError(
            options.provider,
            options.modelSetting ?? 'the model setting',
            options.model ?? '(unknown)',
            failure.reason,
            { cause: error },
          );
        }
        if (failure.retryAfterMs !== undefined && failure.retryAfterMs > RETRY_LIMITS.maxRetryAfterMs) {
          throw unavailable(`${failure.reason}, asked to wait ${Math.ceil(failure.retryAfterMs / 1000)} s`);
        }
        if (n > options.maxRetries) {
          throw unavailable(
            failure.unreachable
              ? `${couldNotReach(options, failure.unreachable)} (${n} attempts)`
              : `still ${failure.reason} after ${n} attempts`,
          );
        }
        const wait = failure.retryAfterMs ?? equalJitter(delayMs, options.random);
        metrics.modelRetries.inc({
          provider: options.provider,
          reason: failure.reason.split(/[\s:(]/)[0] || 'unknown',
        });
        const reason = failure.unreachable ? couldNotReach(options, failure.unreachable) : failure.reason;
        options.log?.warn(
          { provider: options.provider, reason, attempt: n, waitMs: Math.round(wait) },
          'retrying model round',
        );
        return wait;
      },
    },
  );
}

/** The callbacks of one attempt, noting whether it delivered text that a retry has to withdraw. */
function trackDelivery(callbacks: RoundCallbacks): { tracked: RoundCallbacks; delivered: () => boolean } {
  let delivered = false;
  const tracked: RoundCallbacks = {
    onText: (delta) => {
      delivered = true;
      callbacks.onText(delta);
    },
    onRoundRestart: () => {
      delivered = false;
      callbacks.onRoundRestart();
    },
    onUsage: (usage, model) => callbacks.onUsage?.(usage, model),
    onAttemptFailed: () => callbacks.onAttemptFailed?.(),
    onOutputBytes: (bytes) => callbacks.onOutputBytes?.(bytes),
  };
  return { tracked, delivered: () => delivered };
}

/** The one line a person reads when the model's host cannot be reached: which host, and why. */
function couldNotReach(options: Pick<RetryOptions, 'host' | 'provider'>, why: string): string {
  return `could not reach the model at ${options.host ?? options.provider}: ${why}`;
}

/** A stream that went silent: retried like a dropped connection. */
class StreamStalledError extends Error {
  constructor(idleMs: number) {
    super(`the model stream sent nothing for ${Math.round(idleMs / 1000)} s`);
    this.name = 'StreamStalledError';
  }
}

/**
 * Aborts an attempt whose stream goes quiet for `idleMs`. The SDKs' own timeouts stop at the
 * response headers, so a connection that stalls mid-stream would otherwise hang the round until
 * the user gives up. Call `touch()` on every event and `done()` when the attempt ends.
 */
function idleWatch(outer: AbortSignal, idleMs: number) {
  const controller = new AbortController();
  const forward = () => controller.abort(outer.reason);
  outer.addEventListener('abort', forward, { once: true });
  // A signal aborted before the listener existed never fires it.
  if (outer.aborted) forward();
  let timer = setTimeout(() => controller.abort(new StreamStalledError(idleMs)), idleMs);
  return {
    signal: controller.signal,
    touch() {
      clearTimeout(timer);
      timer = setTimeout(() => controller.abort(new StreamStalledError(idleMs)), idleMs);
    },
    done() {
      clearTimeout(timer);
      outer.removeEventListener('abort', forward);
    },
  };
}

export type StreamWatch = ReturnType<typeof idleWatch>;

/**
 * One streamed model round as every provider runs it: attempts with retries (withRetries), each
 * under a stall watch, a stall reported as the stall it was rather than as the SDK's abort error.
 */
export function streamWithRetries<T>(
  options: Omit<RetryOptions, 'signal'> & { streamIdleMs?: number },
  signal: AbortSignal,
  callbacks: RoundCallbacks,
  attempt: (callbacks: RoundCallbacks, watch: StreamWatch) => Promise<T>,
): Promise<T> {
  const { streamIdleMs = RETRY_LIMITS.streamIdleMs, ...retry } = options;
  return withRetries({ ...retry, signal }, callbacks, async (tracked) => {
    const watch = idleWatch(signal, streamIdleMs);
    try {
      return await attempt(tracked, watch);
    } catch (error) {
      watch.signal.throwIfAborted();
      throw error;
    } finally {
      watch.done();
    }
  });
}
