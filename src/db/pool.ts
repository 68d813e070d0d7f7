import pg from 'pg';
import type { Logger } from 'pino';
import { markOrigin } from './errors.ts';
import { storableParameter } from '../core/storable-text.ts';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

/**
 * Outages in progress, by connection string. Shared by every pool of the process on the same
 * database (Countersign's own and graphile-worker's), so an outage is one line, not one per pool or
 * per connection: a database restart drops every connection at once, and pg reports each, twice.
 */
const outages = new Map<string, { since: number; connectionErrors: number }>();

/** Where the database is, without credentials, for log lines. */
function describeTarget(connectionString: string): string | undefined {
  try {
    const u = new URL(connectionString);
    return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return undefined;
  }
}

/** The part of a pg error worth a log line. The error itself carries the whole client (pg-pool sets `err.client`). */
function errorSummary(error: unknown): { message: string; code?: string } {
  const { message, code } = error as { message?: unknown; code?: unknown };
  return { message: String(message ?? error), ...(typeof code === 'string' ? { code } : {}) };
}

/**
 * `fn` with every error it reports — a rejected promise or a callback's error — marked as the
 * database's (src/db/errors.ts), so a caller can tell a database outage from another service's.
 */
function markingErrors<F extends (...args: never[]) => unknown>(fn: F, self: unknown): F {
  const mark = (error: unknown) => markOrigin(error, 'database');
  return ((...args: unknown[]) => {
    const last = args.at(-1);
    if (typeof last === 'function') {
      args[args.length - 1] = (error: unknown, ...rest: unknown[]) =>
        (last as (...a: unknown[]) => unknown)(error && mark(error), ...rest);
    }
    const result = (fn as unknown as (...a: unknown[]) => unknown).apply(self, args);
    return result instanceof Promise
      ? result.catch((error: unknown) => {
          throw mark(error);
        })
      : result;
  }) as unknown as F;
}

/**
 * `query` with every string parameter made storable (src/core/storable-text.ts): a NUL from outside
 * text — a command's output, a file, a message — would otherwise fail its statement, and with it the
 * turn. jsonb parameters are made storable where they are serialized (`toJsonb`).
 */
function storingAnyText<F extends (...args: never[]) => unknown>(fn: F, self: unknown): F {
  return ((...args: unknown[]) => {
    const [first, second] = args;
    if (Array.isArray(second)) args[1] = second.map(storableParameter);
    else if (first && typeof first === 'object' && Object.getPrototypeOf(first) === Object.prototype) {
      const config = first as { values?: unknown };
      if (Array.isArray(config.values)) args[0] = { ...config, values: config.values.map(storableParameter) };
    }
    return (fn as unknown as (...a: unknown[]) => unknown).apply(self, args);
  }) as unknown as F;
}

export function createPool(connectionString: string, max: number, log?: Logger): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis: 10_000, idleTimeoutMillis: 30_000 });
  // The pool's boundary: connecting and querying, through the pool or a client it handed out
  // (transactions, graphile-worker's jobs). pg-pool's own query goes through both.
  pool.connect = markingErrors(pool.connect, pool);
  pool.query = markingErrors(pool.query, pool);
  const database = describeTarget(connectionString);
  const connectionLost = (error: unknown) => {
    // A pool without a log (a one-shot CLI command) stays out of the shared bookkeeping: it could
    // otherwise swallow the outage line the process's logging pools would write.
    if (!log) return;
    // A connection dropping while its own pool ends is the shutdown itself: pg-pool's end() resolves
    // before the sockets close, so stopping the embedded Postgres right after terminates them.
    if (pool.ending) return;
    const outage = outages.get(connectionString);
    if (outage) {
      outage.connectionErrors++;
      return;
    }
    outages.set(connectionString, { since: Date.now(), connectionErrors: 1 });
    log.warn({ database, error: errorSummary(error) }, 'database connection lost');
  };
  // An idle client losing its connection (database restart) must not crash the process.
  pool.on('error', connectionLost);
  pool.on('connect', (client) => {
    // pg-pool's own query runs through this client's, so both store any text.
    client.query = markingErrors(storingAnyText(client.query, client), client);
    // A checked-out client's connection can drop too; unhandled, its 'error' would crash the process.
    client.on('error', connectionLost);
    // A new connection succeeding is the database answering again.
    const outage = outages.get(connectionString);
    if (log && outage) {
      outages.delete(connectionString);
      // warn, like the line that opened the outage: whoever saw that one at their log level sees it end.
      log.warn(
        {
          database,
          outageSeconds: Math.round((Date.now() - outage.since) / 1000),
          connectionErrors: outage.connectionErrors,
        },
        'database connection restored',
      );
    }
  });
  return pool;
}

/** Runs `fn` in a transaction, committing on success and rolling back on any error. */
export async function transaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
