import type { Logger } from 'pino';
import type { ReplyButton, ReplyTarget } from '../../core/reply-target.ts';
import {
  PLACEHOLDER,
  type DeliveryContext,
  type ReplyDelivery,
  type ReplyView,
  type TaskUpdate,
} from '../../reply/delivery.ts';
import { EditDelivery } from '../../reply/edit-delivery.ts';
import type { Outbound, PostedMessage } from '../../reply/outbound.ts';
import type { ReplyMessages } from '../../reply/reply-messages.ts';
import type { PartialEdit } from '../../reply/rate-bucket.ts';
import type { ReplyState } from '../../reply/reply-state.ts';
import { openFenceAt } from '../../reply/split.ts';

/**
 * Slack's append-only streaming (chat.startStream / appendStream / stopStream), as NativeDelivery
 * uses it. Text sent cannot be taken back, so it is used only while the text grows.
 */
export interface NativeStreaming {
  /** Streams older than this are stopped and the reply continues in a new one. */
  readonly maxAgeMs: number;
  /** Text one streamed message may hold before the reply continues in a new message. */
  readonly maxLength: number;
  /**
   * Starts a streamed reply showing `text`; undefined when a native stream is not possible for this
   * target right now (no thread, no budget, not supported), and the caller posts a message instead.
   */
  start(target: ReplyTarget, text: string, tasks?: readonly TaskUpdate[]): Promise<PostedMessage | undefined>;
  /** Waits for, and takes, the rate token of the next append (newest text wins, as with reserve). */
  reserveAppend(target: ReplyTarget): Promise<void>;
  /** Appends `text` (and task updates); `reserved`: the caller already took the token with reserveAppend. */
  append(
    target: ReplyTarget,
    messageId: string,
    text: string,
    reserved?: boolean,
    tasks?: readonly TaskUpdate[],
  ): Promise<void>;
  /** Ends the stream, appending `text` first. */
  /** `buttons`: the finished answer's own (feedback), shown under it as blocks. */
  stop(
    target: ReplyTarget,
    messageId: string,
    text?: string,
    buttons?: ReplyButton[],
    tasks?: readonly TaskUpdate[],
  ): Promise<void>;
  /** Deletes a message (the placeholder that carried status and Stop while the answer streamed). */
  remove(target: ReplyTarget, messageId: string): Promise<void>;
}

/** A native stream refused a call for good (stream expired, method gone): edit the message instead. */
export class StreamingUnavailable extends Error {
  override readonly name = 'StreamingUnavailable';
}

/**
 * Shows a reply through a native stream below the placeholder, which carries the status line and
 * Stop until the answer is complete and is then deleted. Anything a stream cannot do (start, take
 * text back, go on after Slack refused a call, resume another worker's stream) falls back to
 * editing in place, over the same messages.
 */
export class NativeDelivery implements ReplyDelivery {
  readonly #streaming: NativeStreaming;
  readonly #outbound: Outbound;
  readonly #target: ReplyTarget;
  readonly #log: Logger;
  readonly #onDelivered: ((visibleText: string) => void) | undefined;
  /** Where every message but a live stream is shown, and where the reply goes on after a fallback. */
  readonly #edits: EditDelivery;
  readonly #messages: ReplyMessages;
  /** Whether the reply still streams natively (false once it fell back to edits). */
  #active = false;
  /** The live message while it is a native stream, and the live text it shows. */
  #live: { messageId: string; startedAt: number; text: string } | undefined;
  /** The native stream of the last message was stopped with the complete text. */
  #done = false;
  #appendReserved = false;
  #statusMessageId: string | undefined;
  #statusShown: string | undefined;
  /** A native stream a previous worker left open. */
  #orphan: string | undefined;
  /** Each task's state as the stream last showed it (id → status and details). */
  readonly #tasksShown = new Map<string, string>();

  constructor(streaming: NativeStreaming, outbound: Outbound, context: DeliveryContext) {
    this.#streaming = streaming;
    this.#outbound = outbound;
    this.#target = context.target;
    this.#log = context.log;
    this.#onDelivered = context.onDelivered;
    const initial = context.initial;
    // The edits see only the messages; the placeholder and an open stream are this delivery's.
    const layout = initial && { messageIds: initial.messageIds, sealed: initial.sealed, carry: initial.carry };
    this.#edits = new EditDelivery(outbound, { ...context, initial: layout });
    this.#messages = this.#edits.messages;
    this.#statusMessageId = initial?.statusMessageId;
    this.#orphan = initial?.streamingMessageId;
    // Native streams are append-only and cannot be resumed by another worker, so only a reply that
    // has shown nothing yet starts one; the placeholder then carries status and Stop above it.
    const ids = this.#messages.ids;
    const fresh =
      !this.#orphan && this.#messages.sealed.length === 0 && ids.every((id) => id === this.#target.messageId);
    if (this.#target.thread && fresh) {
      this.#active = true;
      if (!this.#statusMessageId && ids[0]) this.#statusMessageId = ids.shift();
    }
  }

  get lastEditAt(): number {
    return this.#edits.lastEditAt;
  }

  snapshot(): ReplyState {
    return {
      ...this.#edits.snapshot(),
      ...(this.#statusMessageId ? { statusMessageId: this.#statusMessageId } : {}),
      ...(this.#live ? { streamingMessageId: this.#live.messageId } : {}),
    };
  }

  upToDate(view: ReplyView): boolean {
    if (this.#orphan || this.#active || this.#done || this.#statusMessageId) return false;
    return this.#edits.upToDate(view);
  }

  async reserve(view: ReplyView, signal?: AbortSignal, partial?: PartialEdit): Promise<void> {
    if (!this.#active) return this.#edits.reserve(view, signal, partial);
    if (this.#live && !view.finished && !this.#appendReserved) {
      await this.#streaming.reserveAppend(this.#target);
      this.#appendReserved = true;
    }
  }

  forgetReservation(): void {
    this.#edits.forgetReservation();
  }

  async sync(view: ReplyView): Promise<void> {
    if (this.#orphan) {
      // Its text may run ahead of the checkpoint; end it and correct it by editing.
      await this.#streaming.stop(this.#target, this.#orphan).catch(() => undefined);
      this.#orphan = undefined;
    }
    if (this.#active && (await this.#syncStream(view))) return;
    if (this.#done) return this.#removeStatus();
    await this.#edits.sync(view);
    if (view.finished) await this.#removeStatus();
  }

  /**
   * Appends while the text only grows, stops the stream when the turn finishes, rolls over to a new
   * stream before one grows too old or too long. False when it had to fall back to edits (the
   * caller then syncs by editing).
   */
  async #syncStream(view: ReplyView): Promise<boolean> {
    const streaming = this.#streaming;
    const messages = this.#messages;
    try {
      await this.#syncStatus(view);
      for (;;) {
        if (this.#done) {
          await this.#removeStatus();
          return true;
        }
        const live = messages.live(view.text);
        const stream = this.#live;
        if (!stream) {
          // Only whole words go out, so a mention split across deltas is never half-sent.
          const room = live.slice(0, streaming.maxLength);
          let end = view.finished && room.length === live.length ? live.length : streamBoundary(room, 0);
          // One word longer than a whole message goes out cut.
          if (end === 0 && live.length > streaming.maxLength) end = room.length;
          if (end === 0) {
            if (!view.finished) return true;
            this.#fallBack('nothing to stream');
            return false;
          }
          const tasks = this.#newTasks(view);
          const started = await streaming.start(this.#target, live.slice(0, end), tasks);
          if (!started) {
            this.#fallBack('no native stream available');
            return false;
          }
          this.#markShown(tasks);
          this.#live = { messageId: started.messageId, startedAt: Date.now(), text: live.slice(0, end) };
          messages.ids[messages.liveIndex] = started.messageId;
          this.#onDelivered?.(this.#live.text);
          continue;
        }
        if (!live.startsWith(stream.text)) {
          // Text was taken back (a model round restarted): a stream cannot unsay it; edits can.
          await streaming.stop(this.#target, stream.messageId).catch(() => undefined);
          this.#fallBack('the text was revised');
          return false;
        }
        if (Date.now() - stream.startedAt >= streaming.maxAgeMs || live.length > streaming.maxLength) {
          await this.#rollOver(live, view);
          continue;
        }
        if (view.finished) {
          const tasks = this.#newTasks(view);
          await streaming.stop(
            this.#target,
            stream.messageId,
            live.slice(stream.text.length) || undefined,
            view.buttons,
            tasks,
          );
          this.#markShown(tasks);
          messages.shown[messages.liveIndex] = live;
          this.#live = undefined;
          this.#done = true;
          this.#onDelivered?.(live);
          continue;
        }
        const end = streamBoundary(live, stream.text.length);
        const tasks = this.#newTasks(view);
        if (end > stream.text.length || tasks.length > 0) {
          const reserved = this.#appendReserved;
          this.#appendReserved = false;
          await streaming.append(
            this.#target,
            stream.messageId,
            live.slice(stream.text.length, Math.max(end, stream.text.length)),
            reserved,
            tasks,
          );
          this.#markShown(tasks);
          if (end > stream.text.length) {
            stream.text = live.slice(0, end);
            this.#onDelivered?.(stream.text);
          }
        }
        return true;
      }
    } catch (error) {
      if (!(error instanceof StreamingUnavailable)) throw error;
      this.#log.warn({ err: error }, 'native streaming refused a call; continuing by editing');
      if (this.#live) await streaming.stop(this.#target, this.#live.messageId).catch(() => undefined);
      this.#fallBack(error.message);
      return false;
    }
  }

  /** The tasks whose state the stream does not show yet (a timeline card per tool call). */
  #newTasks(view: ReplyView): TaskUpdate[] {
    return (view.tasks ?? []).filter((t) => this.#tasksShown.get(t.id) !== shownKey(t));
  }

  #markShown(tasks: readonly TaskUpdate[]): void {
    for (const t of tasks) this.#tasksShown.set(t.id, shownKey(t));
  }

  /** Ends the live stream at a line break (closing an open code block) and seals it; the rest goes in a new one. */
  async #rollOver(live: string, view: ReplyView): Promise<void> {
    const stream = this.#live!;
    const messages = this.#messages;
    const limit = Math.min(live.length, this.#streaming.maxLength);
    // At a line break still to come, else exactly at what the stream shows (a word boundary).
    const cut = Math.max(live.lastIndexOf('\n', limit - 1) + 1, stream.text.length);
    const head = live.slice(0, cut);
    const fence = openFenceAt(head);
    const close = fence ? `${head.endsWith('\n') ? '' : '\n'}${fence.marker}` : '';
    // Measured before the await: the model keeps appending while the stream stops.
    const rest = view.text.slice(messages.sealedLength);
    const skipped = rest.length - (live.length - messages.carry.length);
    await this.#streaming.stop(
      this.#target,
      stream.messageId,
      `${live.slice(stream.text.length, cut)}${close}` || undefined,
    );
    messages.sealed.push({ length: skipped + cut - messages.carry.length, shown: head + close });
    messages.shown[messages.sealed.length - 1] = head + close;
    messages.carry = fence ? `${fence.marker}${fence.info}\n` : '';
    this.#live = undefined;
  }

  /** The placeholder above a native stream: the status line and the Stop button while the turn runs. */
  async #syncStatus(view: ReplyView): Promise<void> {
    if (!this.#statusMessageId || view.finished) return;
    const text = view.status ? `_${view.status}_` : PLACEHOLDER;
    const buttons = view.buttons;
    const key = `${text}${buttons ? '\u0000buttons' : ''}`;
    // The placeholder as the inbound adapter posted it needs no edit until there is something to add.
    if (this.#statusShown === key || (this.#statusShown === undefined && text === PLACEHOLDER && !buttons)) return;
    await this.#outbound.edit(this.#target, this.#statusMessageId, text, { buttons: buttons ?? [] });
    this.#statusShown = key;
  }

  async #removeStatus(): Promise<void> {
    const id = this.#statusMessageId;
    if (!id) return;
    await this.#streaming.remove(this.#target, id);
    this.#statusMessageId = undefined;
  }

  /** Goes on by editing: a live native message becomes an ordinary message; an unused placeholder, the reply. */
  #fallBack(reason: string): void {
    this.#log.info({ reason }, 'reply continues by editing');
    this.#active = false;
    this.#appendReserved = false;
    const messages = this.#messages;
    const index = messages.liveIndex;
    if (this.#live) {
      messages.ids[index] = this.#live.messageId;
      this.#live = undefined;
    } else if (this.#statusMessageId && index === 0 && !messages.ids[0]) {
      messages.ids[0] = this.#statusMessageId;
      this.#statusMessageId = undefined;
    }
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

/** What a task looks like on the stream; a change in any of it is sent again. */
function shownKey(t: TaskUpdate): string {
  return `${t.title}\u0000${t.status}\u0000${t.details ?? ''}`;
}
