import type { ReplyTarget } from '../core/reply-target.ts';
import { PLACEHOLDER, type DeliveryContext, type ReplyDelivery, type ReplyView } from './delivery.ts';
import type { Outbound, ReplyOptions } from './outbound.ts';
import type { PartialEdit } from './rate-bucket.ts';
import { ReplyMessages } from './reply-messages.ts';
import type { ReplyState } from './reply-state.ts';
import { restAfter, splitOnce } from './split.ts';
import { noteRateLimit, SpanKind, withSpan } from '../telemetry/spans.ts';

/**
 * Shows a reply by posting and editing messages in place, the way every platform can: the status
 * line follows the text, full messages are sealed first so a reader always sees complete earlier
 * parts, and long text continues in new messages at safe boundaries (reopening a cut code block).
 */
export class EditDelivery implements ReplyDelivery {
  readonly messages: ReplyMessages;
  readonly #outbound: Outbound;
  readonly #target: ReplyTarget;
  readonly #onDelivered: ((visibleText: string) => void) | undefined;
  #lastEditAt = 0;
  /** A rate token taken for the next edit (see Outbound.reserve). */
  #reserved = false;
  /**
   * A status placeholder left by a delivery this process does not offer (native streaming switched
   * off while the turn was parked): reset to the bare placeholder once the reply is complete.
   */
  #leftoverStatusId: string | undefined;

  constructor(outbound: Outbound, context: DeliveryContext) {
    this.#outbound = outbound;
    this.#target = context.target;
    this.#onDelivered = context.onDelivered;
    this.messages = new ReplyMessages(context.target, context.initial);
    this.#leftoverStatusId = context.initial?.statusMessageId;
  }

  get lastEditAt(): number {
    return this.#lastEditAt;
  }

  snapshot(): ReplyState {
    return {
      ...this.messages.snapshot(),
      ...(this.#leftoverStatusId ? { statusMessageId: this.#leftoverStatusId } : {}),
    };
  }

  upToDate(view: ReplyView): boolean {
    if (this.#leftoverStatusId) return false;
    const statusSuffix = this.#statusSuffix(view);
    const live = this.messages.live(view.text);
    // Too long for one message: a sync would seal part of it first.
    if (live.length + statusSuffix.length > this.#outbound.limits.maxMessageLength) return false;
    return this.#alreadyShows(this.messages.liveIndex, this.#visible(live, statusSuffix), view);
  }

  async reserve(_view?: ReplyView, signal?: AbortSignal, partial?: PartialEdit): Promise<void> {
    // Only edits draw on the edit budget; posting the first message does not.
    if (this.#outbound.reserve && this.messages.ids[this.messages.liveIndex]) {
      await this.#outbound.reserve(this.#target, signal, partial);
      this.#reserved = true;
    }
  }

  forgetReservation(): void {
    this.#reserved = false;
  }

  async sync(view: ReplyView): Promise<void> {
    const max = this.#outbound.limits.maxMessageLength;
    const messages = this.messages;
    const statusSuffix = this.#statusSuffix(view);
    for (;;) {
      const live = messages.live(view.text);
      if (live.length + statusSuffix.length <= max) break;
      const split = splitOnce(live, live.length > max ? max : max - statusSuffix.length);
      if (split.consumed >= live.length) break;
      // Seal a full message first, so a reader always sees complete earlier parts.
      const index = messages.liveIndex;
      await this.#show(index, split.head, undefined);
      const carried = messages.carry.length;
      const next = restAfter(live, split);
      messages.sealed.push({ length: split.consumed - carried, shown: split.head });
      messages.carry = split.carry;
      // Whitespace dropped at the cut still counts as covered text.
      const skipped = live.length - split.consumed - (next.length - split.carry.length);
      const last = messages.sealed[messages.sealed.length - 1];
      if (last && skipped > 0) last.length += skipped;
    }
    const index = messages.liveIndex;
    const visible = this.#visible(messages.live(view.text), statusSuffix);
    if (!this.#alreadyShows(index, visible, view)) await this.#show(index, visible, view.buttons);
    if (view.finished && this.#leftoverStatusId) {
      await this.#outbound.edit(this.#target, this.#leftoverStatusId, PLACEHOLDER);
      this.#leftoverStatusId = undefined;
    }
  }

  /** Whether message `index` exists and already shows `visible` with the buttons due now. */
  #alreadyShows(index: number, visible: string, view: ReplyView): boolean {
    const messages = this.messages;
    return (
      Boolean(messages.ids[index]) &&
      messages.shown[index] === visible &&
      messages.buttonsShown[index] === buttonsKey(view.buttons)
    );
  }

  /** The status line as it follows the text. */
  #statusSuffix(view: ReplyView): string {
    return view.status ? `\n\n_${view.status}_` : '';
  }

  /** The message being written as it should look: its text (or the placeholder) and the status line if it fits. */
  #visible(live: string, statusSuffix: string): string {
    const fits = live.length + statusSuffix.length <= this.#outbound.limits.maxMessageLength;
    return `${live.length > 0 ? live : PLACEHOLDER}${fits ? statusSuffix : ''}`;
  }

  async #show(index: number, text: string, buttons: ReplyOptions['buttons']): Promise<void> {
    const options: ReplyOptions = { buttons: buttons ?? [] };
    const messages = this.messages;
    this.#lastEditAt = Date.now();
    const existing = messages.ids[index];
    await withSpan(existing ? 'deliver edit' : 'deliver post', deliverySpan(this.#target, index), async (span) => {
      try {
        if (existing) {
          const reserved = this.#reserved;
          this.#reserved = false;
          await this.#outbound.edit(this.#target, existing, text, reserved ? { ...options, reserved } : options);
        } else {
          const posted = await this.#outbound.post(this.#target, text, options);
          messages.ids[index] = posted.messageId;
        }
      } catch (error) {
        noteRateLimit(span, error);
        throw error;
      }
    });
    messages.shown[index] = text;
    messages.buttonsShown[index] = buttonsKey(buttons);
    this.#onDelivered?.(text);
  }
}

/** Which buttons a message shows, as one comparable string ('' for none). */
function buttonsKey(buttons: ReplyOptions['buttons']): string {
  return (buttons ?? []).map((b) => b.value).join('\u0000');
}

/** A platform delivery's span (a 429 the outbound meets shows on it as an event). */
function deliverySpan(target: ReplyTarget, index: number) {
  return {
    kind: SpanKind.CLIENT,
    attributes: {
      'countersign.platform': target.platform,
      'countersign.reply.channel': target.channel,
      'countersign.reply.message_index': index,
    },
  };
}
