/** Errors that mean "the database is unreachable right now", as opposed to a bug or bad data. */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);

export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e: unknown = error; e; e = (e as { cause?: unknown }).cause) {
    if (typeof e !== 'object') return false;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
    const message = String((e as { message?: unknown }).message ?? '');
    if (
      /Connection terminated|connection timeout|Client has encountered a connection error|terminating connection/i.test(
        message,
      )
    ) {
      return true;
    }
    if (e instanceof AggregateError && e.errors.some(isDatabaseUnavailable)) return true;
  }
  return false;
}

/**
 * Waits until the database answers again (or `maxWaitMs` passes). A task that failed because the
 * database went away waits here before it rethrows, so graphile-worker records the failure (and
 * schedules the retry that resumes the turn) against a live database instead of losing the update.
 */
export async function waitForDatabase(
  pool: { query(sql: string): Promise<unknown> },
  options: { maxWaitMs?: number; onRetry?: (attempt: number) => void } = {},
): Promise<boolean> {
  const deadline = Date.now() + (options.maxWaitMs ?? 10 * 60_000);
  let delay = 250;
  for (let attempt = 1; Date.now() < deadline; attempt++) {
    try {
      await pool.query('SELECT 1');
      return true;
    } catch {
      options.onRetry?.(attempt);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 5000);
    }
  }
  return false;
}
