import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Pool, Queryable } from '../db/pool.ts';
import { isDatabaseUnavailable, waitForDatabase } from '../db/errors.ts';
import type { Outbound, OutboundRegistry } from './outbound.ts';
import { ReplyMessages } from './reply-messages.ts';
import { ReplyStream } from './reply-stream.ts';
import {
  claimOrphanedRows,
  claimRowOf,
  findRowOf,
  hasRowOf,
  insertOutboxRow,
  recordReplyState,
  releaseRow,
  removeDelivered,
  type NewOutboxRow,
  type OutboxRow,
} from './outbox.ts';

export interface OutboxDelivererOptions {
  pool: Pool;
  outbounds: OutboundRegistry;
  log: Logger;
  /** This process's id in countersign.worker_processes: the rows it delivers are locked to it. */
  processId: string;
  /** How often rows nobody delivers (a killed process's, a failed delivery's) are looked for. */
  pollMs?: number;
  /** How long one delivery may keep failing (platform down) before the row is released for later. */
  deliveryDeadlineMs?: number;
  /** Called once a row's text is visible and the row is gone (the turn's "answer visible" effects). */
  onDelivered(row: OutboxRow): void;
}

/** Deliveries one process runs at once: each mostly sleeps on a rate token, so many are cheap. */
const MAX_IN_FLIGHT = 200;
/** Deliveries of one row that may fail (each for up to the delivery deadline) before it is dropped. */
const MAX_ATTEMPTS = 5;
/** How long a row whose delivery failed rests before any process tries it again. */
const RETRY_DELAY_MS = 30_000;
/**
 * How often a reply that waits for another one (a continuation's, for its parked turn's text) looks
 * whether that one is visible yet, when another process delivers it.
 */
const AWAIT_POLL_MS = 250;

/**
 * Delivers the reply outbox (src/reply/outbox.ts): every worker process runs one. A turn's final
 * text is written as a row locked to the process that computed it, which delivers it at once
 * (`deliver`); the turn's worker slot is already free, so the wait for the platform's budget holds
 * nothing but a sleeping promise. Rows nobody delivers — their process was killed, or a delivery
 * failed — are claimed by whichever process polls first (FOR UPDATE SKIP LOCKED), the way a dead
 * worker's turns are taken over. A delivery edits the messages the row names and posts only what
 * is missing, recording each post before going on, so a takeover never shows a message twice.
 */
export class OutboxDeliverer {
  readonly #options: OutboxDelivererOptions;
  readonly #inFlight = new Map<string, Delivery>();
  #timer: NodeJS.Timeout | undefined;
  #polling = false;
  #stopped = false;
  /** Ends the waits of replies for other replies (`awaitDelivered`) when this process stops. */
  readonly #stopping = new AbortController();

  constructor(options: OutboxDelivererOptions) {
    this.#options = options;
  }

  start(): void {
    this.#timer = setInterval(() => void this.#poll(), this.#options.pollMs ?? 1000);
    this.#timer.unref();
  }

  /** Writes a reply into the outbox inside the caller's transaction, locked to this process. */
  write(db: Queryable, row: NewOutboxRow): Promise<OutboxRow> {
    return insertOutboxRow(db, row, this.#options.processId);
  }

  /** Starts delivering a row this process wrote, once its transaction committed. */
  deliver(row: OutboxRow): void {
    if (this.#stopped || this.#inFlight.has(row.seq)) return;
    const entry: Delivery = { workItemId: row.workItemId, done: Promise.resolve() };
    this.#inFlight.set(row.seq, entry);
    entry.done = this.#deliverRow(row, entry)
      .catch((error: unknown) => this.#options.log.warn({ err: error, seq: row.seq }, 'outbox delivery failed'))
      .finally(() => this.#inFlight.delete(row.seq));
  }

  /**
   * Resolves once no reply of `workItemId` waits in the outbox any more: it is visible (or was given
   * up). A row this process delivers is awaited; a row of a live process is looked at again until it
   * is gone; a row nobody delivers (its process was killed, or its delivery failed and rests) is
   * taken over and delivered here, so nothing waits on a dead process. What waits is a continuation
   * that must not show anything before its parked turn's text (see `OutboxRow.afterWorkItemId`).
   */
  async awaitDelivered(workItemId: string, signal?: AbortSignal): Promise<void> {
    const { pool, processId } = this.#options;
    const wake = signal ? AbortSignal.any([signal, this.#stopping.signal]) : this.#stopping.signal;
    let outage = false;
    for (;;) {
      wake.throwIfAborted();
      const here = [...this.#inFlight.values()].find((d) => d.workItemId === workItemId);
      if (here) await abortable(here.done, wake);
      try {
        // Just delivered here: only whether the row is gone (a failed delivery rests before a retry).
        const found = here
          ? { waiting: await hasRowOf(pool, workItemId) }
          : await claimRowOf(pool, workItemId, processId);
        if (found.claimed) {
          const { claimed } = found;
          this.#options.log.info({ seq: claimed.seq, workItemId }, 'took over an outbox reply another one waits for');
          this.deliver(claimed);
          continue;
        }
        if (!found.waiting) return;
        outage = false;
      } catch (error) {
        // An outage is waited out like the row itself: a delivery that gave up here could not even
        // release its own row (the database is gone), which would stay locked to this live process
        // and never be shown.
        if (!isDatabaseUnavailable(error)) throw error;
        if (!outage)
          this.#options.log.warn({ err: error, workItemId }, 'database unreachable; still waiting for an outbox reply');
        outage = true;
      }
      await sleep(AWAIT_POLL_MS, undefined, { signal: wake });
    }
  }

  /**
   * Resolves once the reply of `workItemId` will post no new message: its row is gone, or the text
   * it still has to show fits in the messages it has, which are edited where they sit. What waits
   * is a parked turn's card: the park text's messages must all stand above it, as they did when the
   * text was finished before the card was scheduled. A text that only edits its placeholder does
   * not hold the card back (on Slack the edit waits for chat.update's budget; the card does not).
   */
  async awaitPostsOf(workItemId: string, signal?: AbortSignal): Promise<void> {
    const row = await findRowOf(this.#options.pool, workItemId);
    const outbound = row && this.#outboundFor(row);
    if (!row || !outbound || !postsAMessage(row, outbound.limits.maxMessageLength)) return;
    await this.awaitDelivered(workItemId, signal);
  }

  /** Deliveries running in this process (benchmarks, tests). */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /**
   * Stops delivering: each running delivery stops after its call in flight, records where its reply
   * stands and releases its row, so a live process takes it over at its next poll.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort(new Error('the outbox deliverer stopped'));
    clearInterval(this.#timer);
    const { pool, processId, log } = this.#options;
    await Promise.all(
      [...this.#inFlight].map(async ([seq, { stream }]) => {
        const state = await stream?.handOff();
        try {
          if (state) await recordReplyState(pool, seq, processId, state);
          await releaseRow(pool, seq, processId, { delayMs: 0, failed: false });
        } catch (error) {
          log.warn({ err: error, seq }, 'could not release an outbox row; it is taken over once this process is gone');
        }
      }),
    );
  }

  async #poll(): Promise<void> {
    if (this.#polling || this.#stopped) return;
    this.#polling = true;
    try {
      const room = MAX_IN_FLIGHT - this.#inFlight.size;
      if (room <= 0) return;
      const rows = await claimOrphanedRows(this.#options.pool, this.#options.processId, room);
      for (const row of rows) {
        this.#options.log.info({ seq: row.seq, workItemId: row.workItemId }, 'took over an outbox reply');
        this.deliver(row);
      }
    } catch (error) {
      this.#options.log.warn({ err: error }, 'could not look for outbox replies (database unreachable?)');
    } finally {
      this.#polling = false;
    }
  }

  async #deliverRow(row: OutboxRow, entry: Delivery): Promise<void> {
    const { pool, processId, log } = this.#options;
    const rowLog = log.child({ workItemId: row.workItemId, outboxSeq: row.seq });
    const outbound = this.#outboundFor(row);
    if (!outbound) {
      // A platform this process does not speak: left for a process that does.
      rowLog.warn({ platform: row.target.platform }, 'no outbound for an outbox reply here; released');
      await releaseRow(pool, row.seq, processId, { delayMs: RETRY_DELAY_MS, failed: false });
      return;
    }
    let recorded = JSON.stringify(row.replyState.messageIds);
    let recording = Promise.resolve();
    let lost = false;
    const stream = new ReplyStream(outbound, row.target, {
      log: rowLog,
      initial: row.replyState,
      editsInPlace: true,
      ...(this.#options.deliveryDeadlineMs ? { deliveryDeadlineMs: this.#options.deliveryDeadlineMs } : {}),
      onDelivered: () => {
        // Only a post changes which messages exist; edits need no record.
        const state = stream.snapshot();
        if (JSON.stringify(state.messageIds) === recorded) return;
        recorded = JSON.stringify(state.messageIds);
        recording = recording
          .then(async () => {
            if (!(await recordReplyState(pool, row.seq, processId, state))) lost = true;
          })
          .catch((error: unknown) => rowLog.warn({ err: error }, 'could not record a posted outbox message'));
      },
    });
    entry.stream = stream;
    try {
      // Nothing of this reply shows before the reply it follows (a parked turn's text) is visible.
      if (row.afterWorkItemId) await this.awaitDelivered(row.afterWorkItemId);
      await stream.finish(row.text, row.buttons);
    } catch (error) {
      await recording;
      // Stopping: `stop` releases the row for a live process.
      if (this.#stopped) return;
      await this.#failed(row, error, rowLog);
      return;
    }
    await recording;
    if (this.#stopped) return;
    if (lost || !(await untilDatabaseAnswers(pool, () => removeDelivered(pool, row.seq, processId)))) {
      rowLog.warn('another process took this outbox reply over while it was delivered here');
      return;
    }
    this.#options.onDelivered(row);
  }

  #outboundFor(row: OutboxRow): Outbound | undefined {
    try {
      return this.#options.outbounds.for(row.target);
    } catch {
      return undefined;
    }
  }

  async #failed(row: OutboxRow, error: unknown, log: Logger): Promise<void> {
    const { pool, processId } = this.#options;
    if (row.attempts + 1 >= MAX_ATTEMPTS) {
      log.error({ err: error, attempts: row.attempts + 1 }, 'gave up delivering an outbox reply');
      await removeDelivered(pool, row.seq, processId);
      return;
    }
    log.warn({ err: error }, 'outbox reply not delivered; released for a later try');
    await releaseRow(pool, row.seq, processId, { delayMs: RETRY_DELAY_MS, failed: true });
  }
}

/** A delivery running in this process: whose reply it is, its stream, once made, and its end. */
interface Delivery {
  workItemId: string;
  stream?: ReplyStream;
  done: Promise<void>;
}

/** Whether delivering `row` posts a message: it has none yet, or its text overflows the last one it has. */
function postsAMessage(row: OutboxRow, maxMessageLength: number): boolean {
  const messages = new ReplyMessages(row.target, row.replyState);
  return !messages.ids[messages.liveIndex] || messages.live(row.text).length > maxMessageLength;
}

/** `promise`, or a rejection as soon as `signal` is aborted (the promise itself runs on). */
function abortable(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Runs `step`, waiting out a database outage and trying again: a delivered reply must be recorded so. */
async function untilDatabaseAnswers<T>(pool: Pool, step: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await step();
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      await waitForDatabase(pool);
    }
  }
}
