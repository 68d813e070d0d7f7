import pg from 'pg';
import type { Logger } from 'pino';
import type { Pool, Queryable } from '../db/pool.ts';
import { readStopRequest, readTurnOwner, recordStopRequest } from './turn-lifecycle.ts';
import { ReplyTarget } from '../core/reply-target.ts';
import { personKey, sameAccountHere, type Requester } from '../core/person.ts';

export const STOP_CHANNEL = 'countersign_stop';
export class StopRequested extends Error {
  readonly by: Requester;
  constructor(by: Requester) {
    super(`stopped by ${personKey(by)}`);
    this.name = 'StopRequested';
    this.by = by;
  }
}

export type StopResult = { ok: true } | { ok: false; reason: string };

/**
 * Records a stop request for a turn and tells every worker. Only the requester or an approver (as
 * the policy names them, where the turn runs) may stop a turn; a turn that already finished can't be stopped.
 */
export async function requestStop(
  pool: Pool,
  workItemId: string,
  by: Requester,
  isApprover: (person: Requester, reply: ReplyTarget) => boolean,
): Promise<StopResult> {
  const row = await readTurnOwner(pool, workItemId);
  if (!row) return { ok: false, reason: 'That turn does not exist.' };
  const reply = ReplyTarget.safeParse(row.reply);
  const isRequester = sameAccountHere(by, row.requester);
  if (!isRequester && !(reply.success && isApprover(by, reply.data))) {
    return { ok: false, reason: 'Only the person who asked, or an approver, can stop this.' };
  }
  const recorded = await recordStopRequest(pool, workItemId, by, STOP_CHANNEL);
  if (!recorded) return { ok: false, reason: 'This turn has already finished.' };
  return { ok: true };
}

export async function stopRequestOf(db: Queryable, workItemId: string): Promise<Requester | undefined> {
  return readStopRequest(db, workItemId);
}

/**
 * Listens for stop requests and aborts the matching running turns of this process. Reconnects when
 * the database goes away; turns also check for a stop between rounds, so nothing depends on one
 * notification arriving.
 */
export class StopListener {
  readonly #connectionString: string;
  readonly #log: Logger;
  readonly #running = new Map<string, AbortController>();
  #client: pg.Client | undefined;
  #closed = false;
  #retryMs = 500;

  constructor(connectionString: string, log: Logger) {
    this.#connectionString = connectionString;
    this.#log = log;
  }

  async start(): Promise<void> {
    await this.#connect();
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({ connectionString: this.#connectionString });
    client.on('notification', (message) => {
      if (message.channel === STOP_CHANNEL && message.payload) void this.#onStop(message.payload);
    });
    client.on('error', (error) => {
      this.#log.warn({ err: error }, 'stop listener lost its database connection');
      this.#reconnect(client);
    });
    client.on('end', () => this.#reconnect(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${STOP_CHANNEL}`);
      this.#client = client;
      this.#retryMs = 500;
    } catch (error) {
      this.#log.warn({ err: error }, 'stop listener could not connect; retrying');
      this.#reconnect(client);
    }
  }

  #reconnect(client: pg.Client): void {
    if (this.#closed || (this.#client && this.#client !== client)) return;
    this.#client = undefined;
    client.removeAllListeners('end');
    client.end().catch(() => undefined);
    const delay = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, 10_000);
    setTimeout(() => void this.#connect(), delay).unref();
  }

  async #onStop(workItemId: string): Promise<void> {
    const controller = this.#running.get(workItemId);
    if (!controller) return;
    try {
      const by = await stopRequestOf(
        { query: (text: string, values?: unknown[]) => this.#client!.query(text, values) } as Queryable,
        workItemId,
      );
      controller.abort(new StopRequested(by ?? { platform: 'unknown', userId: 'unknown' }));
    } catch {
      controller.abort(new StopRequested({ platform: 'unknown', userId: 'unknown' }));
    }
  }

  /** Registers a running turn; returns the signal that fires when someone stops it. */
  track(workItemId: string): { signal: AbortSignal; abort(by: Requester): void; release(): void } {
    const controller = new AbortController();
    this.#running.set(workItemId, controller);
    return {
      signal: controller.signal,
      abort: (by) => controller.abort(new StopRequested(by)),
      release: () => {
        if (this.#running.get(workItemId) === controller) this.#running.delete(workItemId);
      },
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
  }
}
