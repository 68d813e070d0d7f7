/**
 * Where an error was raised. A code such as ECONNREFUSED or ENOTFOUND says a connection failed, not
 * to what: a model host that does not resolve must not read as a database outage (the turn would be
 * handed back and retried for minutes instead of failing with a line that names the host).
 */
export type ErrorOrigin = 'database' | 'service';

const origins = new WeakMap<object, ErrorOrigin>();

/**
 * Records where `error` came from: `database` for what Countersign's pools throw (src/db/pool.ts),
 * `service` for what an HTTP client talking to another service throws (a model provider). Returns the
 * error, so `throw markOrigin(error, …)` reads as one step.
 */
export function markOrigin<T>(error: T, origin: ErrorOrigin): T {
  if (typeof error === 'object' && error !== null && !origins.has(error)) origins.set(error, origin);
  return error;
}

/** Errors that mean "the database is unreachable right now", as opposed to a bug or bad data. */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);

/** pg's own words for a connection it lost or could not open in time. */
const UNAVAILABLE_MESSAGE =
  /Connection terminated|connection timeout|Client has encountered a connection error|terminating connection/i;

/** The error and its causes (`cause`, and the members of an AggregateError), outermost first. */
function* chain(error: unknown): Generator<object> {
  for (let e: unknown = error; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) {
    yield e;
    if (e instanceof AggregateError) for (const member of e.errors) yield* chain(member);
  }
}

function saysUnreachable(error: unknown): boolean {
  for (const e of chain(error)) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
    if (UNAVAILABLE_MESSAGE.test(String((e as { message?: unknown }).message ?? ''))) return true;
  }
  return false;
}

/**
 * Whether `error` means the database is unreachable. The first error in the chain whose origin is
 * known decides: thrown by another service's client (a model host not answering) it never is; thrown
 * by a pool, its code says. Errors without a known origin come from pg clients outside a pool (the
 * migrations), and are judged by their code alone.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (const e of chain(error)) {
    const origin = origins.get(e);
    if (origin === 'service') return false;
    if (origin === 'database') return saysUnreachable(e);
  }
  return saysUnreachable(error);
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
