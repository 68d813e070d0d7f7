import { setTimeout as timerSleep } from 'node:timers/promises';

/**
 * The one retry loop of the app: an attempt, and after each failure a wait that doubles from
 * `firstDelayMs` up to `maxDelayMs`. What counts as retryable, what is logged, and whether the
 * wait is the doubled one, a jittered one or the server's retry-after are the caller's to say in
 * `onFailure`, so each caller keeps its own rules while the loop, the doubling and the abort
 * handling live here once.
 */
export interface BackoffOptions {
  /** The wait after the first failed attempt; each later one doubles it. */
  firstDelayMs: number;
  /** The longest wait. Default: no cap. */
  maxDelayMs?: number;
  /** Attempts in all; the last one's error is thrown as it is. Default: no limit. */
  maxAttempts?: number;
  /**
   * Runs after each failed attempt (but not the last of `maxAttempts`, nor once `signal` aborted)
   * with the doubled wait. It throws to give up (the error, or a clearer one) and returns the wait
   * to sleep: `delayMs` itself, or another (jitter, a retry-after the server asked for).
   */
  onFailure?: (error: unknown, failure: { attempt: number; delayMs: number }) => number;
  /** Stops the loop: checked before each attempt, and it cuts a wait short. */
  signal?: AbortSignal;
  /** How a wait is slept (tests pass a fake clock). Rejects when `signal` aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** The wait after failed attempt `attempt` (1-based): `firstDelayMs` doubled `attempt - 1` times, capped. */
export function backoffDelayMs(attempt: number, firstDelayMs: number, maxDelayMs = Infinity): number {
  return Math.min(maxDelayMs, firstDelayMs * 2 ** (attempt - 1));
}

const defaultSleep = (ms: number, signal?: AbortSignal) => timerSleep(ms, undefined, signal ? { signal } : {});

/** Runs `attempt` (given its 1-based number) until it resolves, `onFailure` throws, or the attempts run out. */
export async function retryWithBackoff<T>(
  attempt: (attempt: number) => Promise<T>,
  options: BackoffOptions,
): Promise<T> {
  const { signal, maxAttempts = Infinity } = options;
  const sleep = options.sleep ?? defaultSleep;
  for (let n = 1; ; n++) {
    try {
      signal?.throwIfAborted();
      return await attempt(n);
    } catch (error) {
      // A stop is not a failure to retry; the attempt's own error says best what it was doing.
      if (signal?.aborted || n >= maxAttempts) throw error;
      const delayMs = backoffDelayMs(n, options.firstDelayMs, options.maxDelayMs);
      await sleep(options.onFailure ? options.onFailure(error, { attempt: n, delayMs }) : delayMs, signal);
    }
  }
}
