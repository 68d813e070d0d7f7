import { z } from 'zod';
import type { Logger } from 'pino';
import type { Outbound, ReplyOptions, ReplyTarget } from './outbound.ts';
import { restAfter, splitOnce } from './split.ts';

/** What a resumed turn needs to keep editing the same messages instead of posting new ones. */
export const ReplyState = z.object({
  messageIds: z.array(z.string()),
  /** Messages that are complete (every message but the last): how much of the text each covers. */
  sealed: z.array(z.object({ length: z.number().int().nonnegative(), shown: z.string() })),
  /** What the live message starts with after a split (a reopened code fence). */
  carry: z.string().default(''),
});
export type ReplyState = z.infer<typeof ReplyState>;

const PLACEHOLDER = '…';

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
  /** Called after every successful platform call, with the text now visible (benchmarks, metrics). */
  onDelivered?: (visibleText: string) => void;
}

/**
 * Streams one reply into a chat platform by editing messages in place. Edits are coalesced to the
 * platform's rate (the newest text always wins, intermediate texts are skipped), long text continues
 * in new messages at safe boundaries, and `finish` returns only once the complete text is visible.
 */
export class ReplyStream {
  readonly #outbound: Outbound;
  readonly #target: ReplyTarget;
  readonly #log: Logger;
  readonly #deadlineMs: number;
  readonly #liveButtons: ReplyOptions['buttons'];
  readonly #onDelivered: ((visibleText: string) => void) | undefined;

  #text = '';
  #roundStart = 0;
  #status: string | undefined;
  #finished = false;
  #messageIds: string[];
  #sealed: ReplyState['sealed'];
  #carry: string;
  /** What each message shows right now, as far as we know. */
  #shown: string[] = [];
  #dirty = false;
  #pumping: Promise<void> | undefined;
  #lastSendAt = 0;
  #wake: (() => void) | undefined;
  /** A rate token taken for the next edit (see Outbound.reserve). */
  #reserved = false;

  constructor(outbound: Outbound, target: ReplyTarget, options: ReplyStreamOptions) {
    this.#outbound = outbound;
    this.#target = target;
    this.#log = options.log;
    this.#deadlineMs = options.deliveryDeadlineMs ?? 10 * 60_000;
    this.#liveButtons = options.liveButtons;
    this.#onDelivered = options.onDelivered;
    this.#messageIds = [...(options.initial?.messageIds ?? (target.messageId ? [target.messageId] : []))];
    this.#sealed = [...(options.initial?.sealed ?? [])];
    this.#carry = options.initial?.carry ?? '';
    this.#shown = this.#sealed.map((s) => s.shown);
  }

  get text(): string {
    return this.#text;
  }

  snapshot(): ReplyState {
    return { messageIds: [...this.#messageIds], sealed: [...this.#sealed], carry: this.#carry };
  }

  /** Restores the text a resumed turn had already produced, without re-sending what is visible. */
  restoreText(text: string): void {
    this.#text = text;
    this.#roundStart = text.length;
  }

  beginRound(): void {
    this.#roundStart = this.#text.length;
  }

  /** Forgets the text of the current round (it is about to be streamed again). */
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

  /** A progress line (e.g. "Running `deploy`…") shown under the text until the turn finishes. */
  setStatus(status: string | undefined): void {
    if (status === this.#status) return;
    this.#status = status;
    this.#schedule();
  }

  /** Shows the complete text (optionally replaced) without status or live buttons; resolves when visible. */
  async finish(finalText?: string): Promise<void> {
    if (finalText !== undefined) this.#text = finalText;
    this.#status = undefined;
    this.#finished = true;
    this.#dirty = true;
    await this.#ensurePump();
    // A pump that was mid-call when we finished may have sent stale text; run once more if so.
    while (this.#dirty) await this.#ensurePump();
  }

  #schedule(): void {
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
    let backoffMs = 0;
    while (this.#dirty) {
      const wait = Math.max(backoffMs, this.#lastSendAt + this.#outbound.limits.minEditIntervalMs - Date.now());
      if (wait > 0) await this.#sleep(wait);
      try {
        // Take the platform's rate token first, then read the text: while we waited for the budget
        // the text may have moved on (or finished), and only the newest version is worth a call.
        if (this.#outbound.reserve && this.#messageIds[this.#sealed.length]) {
          await this.#outbound.reserve(this.#target);
          this.#reserved = true;
        }
        this.#dirty = false;
        await this.#sync();
        backoffMs = 0;
      } catch (error) {
        this.#dirty = true;
        this.#reserved = false;
        if (Date.now() - startedAt > this.#deadlineMs && this.#finished) {
          throw new Error(`Could not deliver the reply within ${this.#deadlineMs} ms`, { cause: error });
        }
        backoffMs = retryAfterMs(error) ?? Math.min(30_000, Math.max(250, backoffMs * 2));
        this.#log.warn({ err: error, retryInMs: backoffMs }, 'reply edit failed; retrying with the latest text');
      }
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      // Finishing should not wait out a long coalescing pause beyond the platform's interval.
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Makes the platform show the current text: seals full messages, edits changed ones, posts new ones. */
  async #sync(): Promise<void> {
    const max = this.#outbound.limits.maxMessageLength;
    const statusSuffix = this.#status ? `\n\n_${this.#status}_` : '';
    for (;;) {
      const live = this.#live();
      if (live.length + statusSuffix.length <= max) break;
      const split = splitOnce(live, live.length > max ? max : max - statusSuffix.length);
      if (split.consumed >= live.length) break;
      // Seal a full message first, so a reader always sees complete earlier parts.
      const index = this.#sealed.length;
      await this.#show(index, split.head, undefined);
      const carried = this.#carry.length;
      const next = restAfter(live, split);
      this.#sealed.push({ length: split.consumed - carried, shown: split.head });
      this.#carry = split.carry;
      // Whitespace dropped at the cut still counts as covered text.
      const skipped = live.length - split.consumed - (next.length - split.carry.length);
      const last = this.#sealed[this.#sealed.length - 1];
      if (last && skipped > 0) last.length += skipped;
    }
    const index = this.#sealed.length;
    const live = this.#live();
    const visible = `${live.length > 0 ? live : PLACEHOLDER}${live.length + statusSuffix.length <= max ? statusSuffix : ''}`;
    const buttons = this.#finished ? undefined : this.#liveButtons;
    if (this.#shown[index] === visible && !this.#finished) return;
    if (this.#shown[index] === visible && this.#messageIds[index] && !this.#liveButtons) return;
    await this.#show(index, visible, buttons);
  }

  /** The text of the message still being written. */
  #live(): string {
    const sealedLength = this.#sealed.reduce((n, s) => n + s.length, 0);
    const rest = this.#text.slice(sealedLength);
    return this.#carry
      ? this.#carry + rest.replace(/^\n/, '')
      : this.#sealed.length > 0
        ? rest.replace(/^\s+/, '')
        : rest;
  }

  async #show(index: number, text: string, buttons: ReplyOptions['buttons']): Promise<void> {
    const options: ReplyOptions = { buttons: buttons ?? [] };
    this.#lastSendAt = Date.now();
    const existing = this.#messageIds[index];
    if (existing) {
      const reserved = this.#reserved;
      this.#reserved = false;
      await this.#outbound.edit(this.#target, existing, text, reserved ? { ...options, reserved } : options);
    } else {
      const posted = await this.#outbound.post(this.#target, text, options);
      this.#messageIds[index] = posted.messageId;
    }
    this.#shown[index] = text;
    this.#onDelivered?.(text);
  }

  /** Wakes a pump waiting out its interval (used when the turn finishes). */
  nudge(): void {
    this.#wake?.();
  }
}
