import type { ReplyTarget } from '../../src/core/reply-target.ts';
import type { PostedMessage, ReplyOptions } from '../../src/reply/outbound.ts';
import { RecordingOutbound } from '../helpers/recording-outbound.ts';

/** One platform call as the outbound received it, in order. */
export interface Call {
  kind: 'post' | 'edit';
  id: string;
  text: string;
}

/**
 * A platform with an edit budget the test holds shut or opens: `reserve` waits until the budget is
 * open (or the wait is given up), as a spent Slack workspace's chat.update budget does. Posting a
 * new message draws on no budget, as on Slack. Every post and edit is logged in order.
 */
export class BudgetedOutbound extends RecordingOutbound {
  #open = false;
  #waiters: Array<() => void> = [];
  /** Waits for a rate token that were given up (the turn handed its reply to the outbox). */
  abandoned = 0;
  readonly log: Call[] = [];

  open(): void {
    this.#open = true;
    for (const wake of this.#waiters.splice(0)) wake();
  }

  async reserve(_target: ReplyTarget, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (this.#open) return;
    await new Promise<void>((resolve, reject) => {
      this.#waiters.push(resolve);
      signal?.addEventListener('abort', () => {
        this.abandoned += 1;
        reject(signal.reason as Error);
      });
    });
  }

  override async post(target: ReplyTarget, text: string, options?: ReplyOptions): Promise<PostedMessage> {
    const posted = await super.post(target, text, options);
    this.log.push({ kind: 'post', id: posted.messageId, text });
    return posted;
  }

  override async edit(target: ReplyTarget, messageId: string, text: string, options?: ReplyOptions): Promise<void> {
    await super.edit(target, messageId, text, options);
    this.log.push({ kind: 'edit', id: messageId, text });
  }
}
