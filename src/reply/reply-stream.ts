import { z } from 'zod';
import type { Logger } from 'pino';
import { StreamingUnavailable, type NativeStreaming, type Outbound, type ReplyOptions } from './outbound.ts';
import { type ReplyTarget } from '../core/reply-target.ts';
import { openFenceAt, restAfter, splitOnce } from './split.ts';

/** What a resumed turn needs to keep editing the same messages instead of posting new ones. */
export const ReplyState = z.object({
  messageIds: z.array(z.string()),
  /** Messages that are complete (every message but the last): how much of the text each covers. */
  sealed: z.array(z.object({ length: z.number().int().nonnegative(), shown: z.string() })),
  /** What the live message starts with after a split (a reopened code fence). */
  carry: z.string().default(''),
  /** The placeholder that shows status and Stop while the answer streams natively below it. */
  statusMessageId: z.string().optional(),
  /** A native stream still open: a resumed turn stops it and goes on by editing. */
  streamingMessageId: z.string().optional(),
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
  /**
   * Live buttons appear only once the turn has run this long: a quick answer never shows a Stop
   * button it would have to take away again (an extra edit against the platform's budget).
   */
  liveButtonsAfterMs?: number;
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
  /** Set by the timer itself (not by comparing clocks: a timer may fire a millisecond before Date.now says it is due). */
  #liveButtonsDue: boolean;
  #liveButtonsTimer: NodeJS.Timeout | undefined;
  /** Whether each message shows the live buttons right now, as far as we know. */
  #buttonsShown: boolean[] = [];
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
  /** A rate token taken for the next edit (see Outbound.reserve). */
  #reserved = false;
  /** The platform's native streaming, while this reply uses it (undefined once it fell back to edits). */
  #streaming: NativeStreaming | undefined;
  /** The live message while it is a native stream, and the live text it shows. */
  #native: { messageId: string; startedAt: number; text: string } | undefined;
  /** The native stream of the last message was stopped with the complete text. */
  #nativeDone = false;
  #appendReserved = false;
  #statusMessageId: string | undefined;
  #statusShown: string | undefined;
  /** A native stream a previous worker left open. */
  #orphanStream: string | undefined;

  constructor(outbound: Outbound, target: ReplyTarget, options: ReplyStreamOptions) {
    this.#outbound = outbound;
    this.#target = target;
    this.#log = options.log;
    this.#deadlineMs = options.deliveryDeadlineMs ?? 10 * 60_000;
    this.#liveButtons = options.liveButtons?.length ? options.liveButtons : undefined;
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
    this.#onDelivered = options.onDelivered;
    const initial = options.initial;
    this.#messageIds = [...(initial?.messageIds ?? (target.messageId ? [target.messageId] : []))];
    this.#sealed = [...(initial?.sealed ?? [])];
    this.#carry = initial?.carry ?? '';
    this.#shown = this.#sealed.map((s) => s.shown);
    this.#statusMessageId = initial?.statusMessageId;
    this.#orphanStream = initial?.streamingMessageId;
    // Native streams are append-only and cannot be resumed by another worker, so only a reply that
    // has shown nothing yet starts one; the placeholder then carries status and Stop above it.
    const fresh =
      !this.#orphanStream && this.#sealed.length === 0 && this.#messageIds.every((id) => id === target.messageId);
    if (outbound.streaming && target.thread && fresh) {
      this.#streaming = outbound.streaming;
      if (!this.#statusMessageId && this.#messageIds[0]) this.#statusMessageId = this.#messageIds.shift();
    }
  }

  get text(): string {
    return this.#text;
  }

  snapshot(): ReplyState {
    return {
      messageIds: [...this.#messageIds],
      sealed: [...this.#sealed],
      carry: this.#carry,
      ...(this.#statusMessageId ? { statusMessageId: this.#statusMessageId } : {}),
      ...(this.#native ? { streamingMessageId: this.#native.messageId } : {}),
    };
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
    clearTimeout(this.#liveButtonsTimer);
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
      // Nothing to send (typically a finish that changes nothing): neither the platform's interval
      // nor a rate token is worth spending, and the turn's worker slot is freed at once.
      if (backoffMs === 0 && this.#upToDate()) {
        this.#dirty = false;
        break;
      }
      const wait = Math.max(backoffMs, this.#lastSendAt + this.#outbound.limits.minEditIntervalMs - Date.now());
      if (wait > 0) await this.#sleep(wait);
      try {
        // Take the platform's rate token first, then read the text: while we waited for the budget
        // the text may have moved on (or finished), and only the newest version is worth a call.
        if (this.#streaming) {
          if (this.#native && !this.#finished && !this.#appendReserved) {
            await this.#streaming.reserveAppend(this.#target);
            this.#appendReserved = true;
          }
        } else if (this.#outbound.reserve && this.#messageIds[this.#sealed.length]) {
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
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  /** Makes the platform show the current text: seals full messages, edits changed ones, posts new ones. */
  async #sync(): Promise<void> {
    if (this.#orphanStream) {
      // Its text may run ahead of the checkpoint; end it and correct it by editing.
      await this.#outbound.streaming?.stop(this.#target, this.#orphanStream).catch(() => undefined);
      this.#orphanStream = undefined;
    }
    if (this.#streaming && (await this.#syncNative())) return;
    if (this.#nativeDone) return this.#removeStatus();
    await this.#syncEdits();
    if (this.#finished) await this.#removeStatus();
  }

  /** Shows the text by editing messages (and posting new ones for long replies). */
  async #syncEdits(): Promise<void> {
    const max = this.#outbound.limits.maxMessageLength;
    const statusSuffix = this.#statusSuffix();
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
    const visible = this.#visible(this.#live(), statusSuffix);
    if (this.#alreadyShows(index, visible)) return;
    await this.#show(index, visible, this.#buttonsNow());
  }

  /** Whether message `index` exists and already shows `visible` with the buttons due now. */
  #alreadyShows(index: number, visible: string): boolean {
    return (
      Boolean(this.#messageIds[index]) &&
      this.#shown[index] === visible &&
      this.#buttonsShown[index] === Boolean(this.#buttonsNow())
    );
  }

  /** The status line as it follows the text. */
  #statusSuffix(): string {
    return this.#status ? `\n\n_${this.#status}_` : '';
  }

  /** The message being written as it should look: its text (or the placeholder) and the status line if it fits. */
  #visible(live: string, statusSuffix: string): string {
    const fits = live.length + statusSuffix.length <= this.#outbound.limits.maxMessageLength;
    return `${live.length > 0 ? live : PLACEHOLDER}${fits ? statusSuffix : ''}`;
  }

  /**
   * Whether a sync would send nothing: the reply is edited in place (no native stream, no status
   * placeholder to clean up), needs no new message, and already shows this text and these buttons.
   * Errs towards false: a false only costs a sync that finds nothing to do.
   */
  #upToDate(): boolean {
    if (this.#orphanStream || this.#streaming || this.#nativeDone || this.#statusMessageId) return false;
    const statusSuffix = this.#statusSuffix();
    const live = this.#live();
    // Too long for one message: a sync would seal part of it first.
    if (live.length + statusSuffix.length > this.#outbound.limits.maxMessageLength) return false;
    return this.#alreadyShows(this.#sealed.length, this.#visible(live, statusSuffix));
  }

  /**
   * Shows the text through the platform's native stream: appends while the text only grows, stops
   * the stream when the turn finishes, rolls over to a new stream before one grows too old or too
   * long. False when it had to fall back to edits (the caller then syncs by editing).
   */
  async #syncNative(): Promise<boolean> {
    const streaming = this.#streaming;
    if (!streaming) return false;
    try {
      await this.#syncStatus();
      for (;;) {
        if (this.#nativeDone) {
          await this.#removeStatus();
          return true;
        }
        const live = this.#live();
        const native = this.#native;
        if (!native) {
          // Only whole words go out, so a mention split across deltas is never half-sent.
          const room = live.slice(0, streaming.maxLength);
          let end = this.#finished && room.length === live.length ? live.length : streamBoundary(room, 0);
          // One word longer than a whole message goes out cut.
          if (end === 0 && live.length > streaming.maxLength) end = room.length;
          if (end === 0) {
            if (!this.#finished) return true;
            this.#fallBack('nothing to stream');
            return false;
          }
          const started = await streaming.start(this.#target, live.slice(0, end));
          if (!started) {
            this.#fallBack('no native stream available');
            return false;
          }
          this.#native = { messageId: started.messageId, startedAt: Date.now(), text: live.slice(0, end) };
          this.#messageIds[this.#sealed.length] = started.messageId;
          this.#onDelivered?.(this.#native.text);
          continue;
        }
        if (!live.startsWith(native.text)) {
          // Text was taken back (a model round restarted): a stream cannot unsay it; edits can.
          await streaming.stop(this.#target, native.messageId).catch(() => undefined);
          this.#fallBack('the text was revised');
          return false;
        }
        if (Date.now() - native.startedAt >= streaming.maxAgeMs || live.length > streaming.maxLength) {
          await this.#rollOver(live, streaming);
          continue;
        }
        if (this.#finished) {
          await streaming.stop(this.#target, native.messageId, live.slice(native.text.length) || undefined);
          this.#shown[this.#sealed.length] = live;
          this.#native = undefined;
          this.#nativeDone = true;
          this.#onDelivered?.(live);
          continue;
        }
        const end = streamBoundary(live, native.text.length);
        if (end > native.text.length) {
          const reserved = this.#appendReserved;
          this.#appendReserved = false;
          await streaming.append(this.#target, native.messageId, live.slice(native.text.length, end), reserved);
          native.text = live.slice(0, end);
          this.#onDelivered?.(native.text);
        }
        return true;
      }
    } catch (error) {
      if (!(error instanceof StreamingUnavailable)) throw error;
      this.#log.warn({ err: error }, 'native streaming refused a call; continuing by editing');
      if (this.#native) await streaming.stop(this.#target, this.#native.messageId).catch(() => undefined);
      this.#fallBack(error.message);
      return false;
    }
  }

  /** Ends the live stream at a line break (closing an open code block) and seals it; the rest goes in a new one. */
  async #rollOver(live: string, streaming: NativeStreaming): Promise<void> {
    const native = this.#native!;
    const limit = Math.min(live.length, streaming.maxLength);
    // At a line break still to come, else exactly at what the stream shows (a word boundary).
    const cut = Math.max(live.lastIndexOf('\n', limit - 1) + 1, native.text.length);
    const head = live.slice(0, cut);
    const fence = openFenceAt(head);
    const close = fence ? `${head.endsWith('\n') ? '' : '\n'}${fence.marker}` : '';
    // Measured before the await: the model keeps appending while the stream stops.
    const rest = this.#text.slice(this.#sealed.reduce((n, s) => n + s.length, 0));
    const skipped = rest.length - (live.length - this.#carry.length);
    await streaming.stop(this.#target, native.messageId, `${live.slice(native.text.length, cut)}${close}` || undefined);
    this.#sealed.push({ length: skipped + cut - this.#carry.length, shown: head + close });
    this.#shown[this.#sealed.length - 1] = head + close;
    this.#carry = fence ? `${fence.marker}${fence.info}\n` : '';
    this.#native = undefined;
  }

  /** The placeholder above a native stream: the status line and the Stop button while the turn runs. */
  async #syncStatus(): Promise<void> {
    if (!this.#statusMessageId || this.#finished) return;
    const text = this.#status ? `_${this.#status}_` : PLACEHOLDER;
    const buttons = this.#buttonsNow();
    const key = `${text}${buttons ? '\u0000buttons' : ''}`;
    // The placeholder as the inbound adapter posted it needs no edit until there is something to add.
    if (this.#statusShown === key || (this.#statusShown === undefined && text === PLACEHOLDER && !buttons)) return;
    await this.#outbound.edit(this.#target, this.#statusMessageId, text, { buttons: buttons ?? [] });
    this.#statusShown = key;
  }

  async #removeStatus(): Promise<void> {
    const id = this.#statusMessageId;
    if (!id) return;
    if (this.#outbound.streaming) await this.#outbound.streaming.remove(this.#target, id);
    else await this.#outbound.edit(this.#target, id, PLACEHOLDER);
    this.#statusMessageId = undefined;
  }

  /** Goes on by editing: a live native message becomes an ordinary message; an unused placeholder, the reply. */
  #fallBack(reason: string): void {
    this.#log.info({ reason }, 'reply continues by editing');
    this.#streaming = undefined;
    this.#appendReserved = false;
    const index = this.#sealed.length;
    if (this.#native) {
      this.#messageIds[index] = this.#native.messageId;
      this.#native = undefined;
    } else if (this.#statusMessageId && index === 0 && !this.#messageIds[0]) {
      this.#messageIds[0] = this.#statusMessageId;
      this.#statusMessageId = undefined;
    }
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
    this.#buttonsShown[index] = Boolean(buttons?.length);
    this.#onDelivered?.(text);
  }

  /** The live buttons, while the turn runs and once they are due. */
  #buttonsNow(): ReplyOptions['buttons'] {
    return !this.#finished && this.#liveButtonsDue ? this.#liveButtons : undefined;
  }
}

/**
 * How far a native stream may go in `text` beyond `from`: the end of the last whole word, or inside a
 * code block the end of the last whole line, so a rollover never has to cut a code line in two.
 */
function streamBoundary(text: string, from: number): number {
  let end = from;
  for (let i = text.length; i > from; i--) {
    if (/\s/.test(text[i - 1] ?? '')) {
      end = i;
      break;
    }
  }
  if (end > from && openFenceAt(text.slice(0, end))) {
    const line = text.lastIndexOf('\n', end - 1) + 1;
    return line > from ? line : from;
  }
  return end;
}
