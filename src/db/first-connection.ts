import pg from 'pg';
import type { Logger } from 'pino';
import { retryWithBackoff } from '../retry/backoff.ts';
import { isDatabaseUnavailable } from './errors.ts';

/**
 * The first connection of a process that starts: it waits for a database that is restarting or not
 * up yet (a process started during a restart comes up when the database does), one log line per
 * attempt, for `waitSeconds` (DATABASE_WAIT_SECONDS). A database that answers "no" (a wrong
 * password, an unknown database) will not say yes by waiting, so that ends the start at once.
 * Only the start waits here: a running worker rides out later outages (docs/queue.md).
 */

/** Where the database is, without credentials. */
function databaseTarget(connectionString: string): { hostPort: string; database: string } {
  try {
    const u = new URL(connectionString);
    const socket = u.searchParams.get('host');
    const host = u.hostname || socket || 'localhost';
    const port = u.port || u.searchParams.get('port') || '5432';
    return { hostPort: `${host}:${port}`, database: decodeURIComponent(u.pathname.slice(1)) || '(default)' };
  } catch {
    return { hostPort: '(unparsable DATABASE_URL)', database: '' };
  }
}

/** Postgres' codes for an answer that waiting will not change. */
const REFUSALS: Record<string, string> = {
  '28P01': 'the password was refused',
  '28000': 'the login was refused',
  '3D000': 'the database does not exist',
};

/** The reason in a few words: what a system error code means, else the server's own message. */
function reasonOf(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const words: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ENOTFOUND: 'host not found',
    EAI_AGAIN: 'host name lookup failed',
    ETIMEDOUT: 'connection timed out',
    ECONNRESET: 'connection reset',
    EHOSTUNREACH: 'host unreachable',
  };
  if (typeof code === 'string' && words[code]) return words[code];
  if (error instanceof AggregateError && error.errors.length > 0) return reasonOf(error.errors[0]);
  const text = String(message ?? error);
  return /timeout/i.test(text) ? 'no answer (connection timed out)' : text;
}

class DatabaseStartError extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'DatabaseStartError';
  }
}

/** One attempt: a connection and `SELECT 1`, given at most `timeoutMs` (a host that drops packets never refuses). */
async function probe(connectionString: string, timeoutMs: number): Promise<void> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Resolves once the database answers; throws a DatabaseStartError naming host:port and the reason
 * when it refuses the login or the database, or has not answered within `waitSeconds`.
 */
export async function waitForFirstConnection(
  connectionString: string,
  log: Logger,
  waitSeconds: number,
): Promise<void> {
  const { hostPort, database } = databaseTarget(connectionString);
  const deadline = Date.now() + waitSeconds * 1000;
  await retryWithBackoff(() => probe(connectionString, Math.max(1000, Math.min(10_000, deadline - Date.now()))), {
    firstDelayMs: 250,
    maxDelayMs: 5000,
    onFailure: (error, { attempt, delayMs }) => {
      const code = (error as { code?: unknown }).code;
      const refusal = typeof code === 'string' ? REFUSALS[code] : undefined;
      if (refusal) {
        throw new DatabaseStartError(
          `The database at ${hostPort} answered, but ${refusal} (database "${database}": ${reasonOf(error)}). Fix DATABASE_URL.`,
          error,
        );
      }
      if (!isDatabaseUnavailable(error) && !(error instanceof AggregateError)) throw error;
      const reason = reasonOf(error);
      if (Date.now() + delayMs > deadline) {
        throw new DatabaseStartError(
          `The database at ${hostPort} did not answer within ${waitSeconds}s (DATABASE_WAIT_SECONDS): ${reason}. Check DATABASE_URL and that the server is up.`,
          error,
        );
      }
      log.warn(
        { database: `${hostPort}/${database}`, attempt, reason, retryInMs: delayMs },
        `database ${hostPort} not reachable (${reason}); attempt ${attempt}, retrying in ${(delayMs / 1000).toFixed(1)}s`,
      );
      return delayMs;
    },
  });
}
