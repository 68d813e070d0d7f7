import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { ReplyTarget } from '../core/reply-target.ts';
import type { ReplyDelivery, ReplyView, TaskUpdate } from './delivery.ts';
import { EditDelivery } from './edit-delivery.ts';
import type { Outbound, ReplyOptions } from './outbound.ts';
import type { ReplySink } from './reply-sink.ts';
import type { ReplyState } from './reply-state.ts';

export { ReplyState } from './reply-state.ts';

function retryAfterMs(error: unknown): number | undefined {
  if (error && typeof error === 'object' && 'retryAfterMs' in error && typeof error.retryAfterMs === 'number') {
    return error.retryAfterMs;
  }
  return undefined;
}

export interface ReplyStreamOptions {
  log: Logger;
  initial?: ReplyState;
  /** Give up delivering the final text after this long (the platform is down). */
  deliveryDeadlineMs?: number;
  /** Buttons shown on the last message while the turn runs (e.g. Stop). */
  liveButtons?: ReplyOptions['buttons'];
  /**
   * Live buttons appear only once the turn has run this long: a quick answer never shows a Stop
   * button it would have to take away again (an extra edit against the platform's budget).
   */
  liveButtonsAfterMs?: number;
  /** Called after every successful platform call, with the text now visible (benchmarks, metrics). */
  onDelivered?: (visibleText: string) => void;
  /** Show the reply by editing in place even where the platform streams natively (the outbox's deliveries). */
  editsInPlace?: boolean;
  /**
   * Resolves once this reply may show something: a continuation's reply waits until its parked
   * turn's text, still in the reply outbox, is visible, so that text never lands after it. Waited
   * for once, before the first platform call; given up (aborted) when the reply is handed off.
   */
  showAfter?: (signal: AbortSignal) => Promise<void>;
}

/**
 * Streams one reply into a chat platform. Calls are coalesced to the platform's rate (the newest
 * text always wins, intermediate texts are skipped), failures are retried with the latest text, and
 * `finish` returns only once the complete text is visible. How the text is shown is the delivery's
 * business: the platform's own (Outbound.createDelivery) or editing messages in place.
 */
export class ReplyStream implements ReplySink {
  readonly #outbound: Outbound;
  readonly #delivery: ReplyDelivery;
  readonly #log: Logger;
  readonly #deadlineMs: number;
  readonly #liveButtons: ReplyOptions['buttons'];
  /** What must be visible before this reply shows anything (see ReplyStreamOptions.showAfter); cleared once it is. */
  #showAfter: ((signal: AbortSignal) => Promise<void>) | undefined;
  /** Set by the timer itself (not by comparing clocks: a timer may fire a millisecond before Date.now says it is due). */
  #liveButtonsDue: boolean;
  #liveButtonsTimer: NodeJS.Timeout | undefined;

  #text = '';
  #roundStart = 0;
  #status: string | undefined;
  #finished = false;
  #finalButtons: ReplyOptions['buttons'];
  readonly #tasks = new Map<string, TaskUpdate>();
  #dirty = false;
  #pumping: Promise<void> | undefined;
  /** Ends the pump's wait for the edit interval early (set only during that wait, never during a backoff). */
  #skipIntervalWait: (() => void) | undefined;
  /** What the delivery reads: always the current state, never a copy (see ReplyView). */
  readonly #view: ReplyView;
  /** Set by handOff: this stream sends nothing more; the outbox shows the rest. */
  #handedOff = false;
  /** Whether any platform call of this stream succeeded (something of the reply is visible). */
  #anyDelivered = false;
  /** Gives up a wait for a rate token when the reply is handed off (the token goes back to the bucket). */
  readonly #reserveAbort = new AbortController();
  /**
   * Aborted when the text becomes final: a partial edit's wait for a rate token, in the budget's
   * second lane behind cards and finals, then queues as a final's (see PartialEdit).
   */
  readonly #finalized = new AbortController();

  constructor(outbound: Outbound, target: ReplyTarget, options: ReplyStreamOptions) {
    this.#outbound = outbound;
    this.#log = options.log;
    this.#deadlineMs = options.deliveryDeadlineMs ?? 10 * 60_000;
    this.#liveButtons = options.liveButtons?.length ? options.liveButtons : undefined;
    this.#showAfter = options.showAfter;
    const delay = options.liveButtonsAfterMs ?? 0;
    this.#liveButtonsDue = delay <= 0;
    if (this.#liveButtons && delay > 0) {
      // The buttons are due even when the text has not changed by then (a long silent tool run).
      this.#liveButtonsTimer = setTimeout(() => {
        this.#liveButtonsDue = true;
        this.#schedule();
      }, delay);
      this.#liveButtonsTimer.unref();
    }
    const onDelivered = (visibleText: string): void => {
      this.#anyDelivered = true;
      options.onDelivered?.(visibleText);
    };
    const context = { target, log: options.log, initial: options.initial, onDelivered };
    const native = options.editsInPlace ? undefined : outbound.createDelivery?.(context);
    this.#delivery = native ?? new EditDelivery(outbound, context);
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the view's getters read this stream's fields
    const stream = this;
    this.#view = {
      get text() {
        return stream.#text;
      },
      get status() {
        return stream.#status;
      },
      get finished() {
        return stream.#finished;
      },
      get tasks() {
        return [...stream.#tasks.values()];
      },
      get buttons() {
        if (stream.#finished) return stream.#finalButtons;
        return stream.#liveButtonsDue ? stream.#liveButtons : undefined;
      },
    };
  }

  get text(): string {
    return this.#text;
  }

  /** Whether this stream has shown anything yet (a text, not only the placeholder posted before it). */
  get anyDelivered(): boolean {
    return this.#anyDelivered;
  }

  snapshot(): ReplyState {
    return this.#delivery.snapshot();
  }

  restoreText(text: string): void {
    this.#text = text;
    this.#roundStart = text.length;
  }

  beginRound(): void {
    this.#roundStart = this.#text.length;
  }

  restartRound(): void {
    if (this.#text.length === this.#roundStart) return;
    this.#text = this.#text.slice(0, this.#roundStart);
    this.#schedule();
  }

  append(delta: string): void {
    if (!delta) return;
    this.#text += delta;
    this.#schedule();
  }

  task(update: TaskUpdate): void {
    const shown = this.#tasks.get(update.id);
    if (shown && shown.status === update.status && shown.details === update.details && shown.title === update.title)
      return;
    this.#tasks.set(update.id, update);
    this.#schedule();
  }

  setStatus(status: string | undefined): void {
    if (status === this.#status) return;
    this.#status = status;
    this.#schedule();
  }

  /** Shows the final text; `buttons` stay on the answer (feedback), where the live ones (Stop) go. */
  async finish(finalText?: string, buttons?: ReplyOptions['buttons']): Promise<void> {
    if (finalText !== undefined) this.#text = finalText;
    this.#finalButtons = buttons?.length ? buttons : undefined;
    this.#status = undefined;
    this.#finished = true;
    this.#finalized.abort();
    this.#dirty = true;
    clearTimeout(this.#liveButtonsTimer);
    // The final text does not wait out the edit interval: the interval paces a stream's partial
    // texts, and the platform's budgets (reserve) still pace this call. Waiting would hold the
    // turn's worker slot for up to a second per answer while other turns queue behind it.
    this.#skipIntervalWait?.();
    await this.#ensurePump();
    // A pump that was mid-call when we finished may have sent stale text; run once more if so.
    while (this.#dirty && !this.#handedOff) await this.#ensurePump();
  }

  /**
   * Stops this stream so the outbox can show the rest of the reply (src/reply/outbox.ts) while the
   * turn's worker slot is freed: a wait for a rate token is given up (the token goes back), a call
   * in flight completes, and where the reply stands is returned for the outbox row. Undefined when
   * the rest cannot be shown by edits from another process: the platform has no budget to wait for
   * (nothing would hold the slot), or a native stream shows the reply (it stays in the turn).
   */
  async handOff(): Promise<ReplyState | undefined> {
    if (!this.#outbound.reserve || !(this.#delivery instanceof EditDelivery)) return undefined;
    this.#handedOff = true;
    clearTimeout(this.#liveButtonsTimer);
    this.#reserveAbort.abort();
    this.#skipIntervalWait?.();
    await this.#pumping?.catch(() => undefined);
    return this.#delivery.snapshot();
  }

  #schedule(): void {
    if (this.#handedOff) return;
    this.#dirty = true;
    void this.#ensurePump().catch((error: unknown) => this.#log.warn({ err: error }, 'reply stream pump failed'));
  }

  #ensurePump(): Promise<void> {
    this.#pumping ??= this.#pump().finally(() => {
      this.#pumping = undefined;
    });
    return this.#pumping;
  }

  async #pump(): Promise<void> {
    const startedAt = Date.now();
    const delivery = this.#delivery;
    let backoffMs = 0;
    while (this.#dirty && !this.#handedOff) {
      // Nothing to send (typically a finish that changes nothing): neither the platform's interval
      // nor a rate token is worth spending, and the turn's worker slot is freed at once.
      if (backoffMs === 0 && delivery.upToDate(this.#view)) {
        this.#dirty = false;
        break;
      }
      // A platform's retry-after is always honoured; the edit interval only between partial texts.
      if (backoffMs > 0) await this.#sleep(backoffMs);
      if (!this.#finished) await this.#waitForInterval(delivery.lastEditAt);
      if (this.#handedOff) break;
      try {
        if (this.#showAfter) {
          await this.#showAfter(this.#reserveAbort.signal);
          this.#showAfter = undefined;
          if (this.#handedOff) break;
        }
        // Take the platform's rate token first, then read the text: while we waited for the budget
        // the text may have moved on (or finished), and only the newest version is worth a call.
        const partial = this.#finished ? undefined : { finalized: this.#finalized.signal };
        await delivery.reserve(this.#view, this.#reserveAbort.signal, partial);
        this.#dirty = false;
        await delivery.sync(this.#view);
        backoffMs = 0;
      } catch (error) {
        this.#dirty = true;
        delivery.forgetReservation();
        if (this.#handedOff) break;
        if (Date.now() - startedAt > this.#deadlineMs && this.#finished) {
          throw new Error(`Could not deliver the reply within ${this.#deadlineMs} ms`, { cause: error });
        }
        backoffMs = retryAfterMs(error) ?? Math.min(30_000, Math.max(250, backoffMs * 2));
        this.#log.warn({ err: error, retryInMs: backoffMs }, 'reply edit failed; retrying with the latest text');
      }
    }
  }

  /** A backoff; cut short when the reply is handed off (the outbox retries on its own). */
  #sleep(ms: number): Promise<void> {
    return sleep(ms, undefined, { signal: this.#reserveAbort.signal }).catch(() => undefined);
  }

  /** Waits until the edit interval since `lastEditAt` has passed, or until the reply is finished. */
  #waitForInterval(lastEditAt: number): Promise<void> {
    const wait = lastEditAt + this.#outbound.limits.minEditIntervalMs - Date.now();
    if (wait <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#skipIntervalWait = undefined;
        resolve();
      };
      const timer = setTimeout(done, wait);
      this.#skipIntervalWait = done;
    });
  }
}
