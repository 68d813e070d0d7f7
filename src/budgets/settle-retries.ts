import { retryWithBackoff } from '../retry/backoff.ts';

/**
 * A settle that fails is tried again. Left alone, the reservation it was to replace is given back
 * uncounted — by the work item's next settle, which drops its earlier reservations, or by
 * housekeeping once its lease runs out — so a call or a run whose settle met a dropped connection
 * would not count at all. A settle that did commit and only lost its answer is counted twice by a
 * retry: an overcount, never spend past a budget.
 */

/** Tries in all, the waits between them doubling from `FIRST_WAIT_MS` (about 1.75 s in all). */
const TRIES = 4;
const FIRST_WAIT_MS = 250;

export function settleWithRetries<T>(settle: () => Promise<T>): Promise<T> {
  return retryWithBackoff(settle, { firstDelayMs: FIRST_WAIT_MS, maxAttempts: TRIES });
}
