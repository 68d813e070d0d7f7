import type { ReplyTarget } from '../core/reply-target.ts';
import type { ReplyState } from './reply-state.ts';

/**
 * How one reply's text is laid out over platform messages: which messages exist, which are sealed
 * (complete, covering a known stretch of the text) and what the live last one starts with. Shared
 * by the deliveries, so one that falls back to another hands over the messages it made.
 */
export class ReplyMessages {
  /** The platform's id of each message, in order; a hole is a message not posted yet. */
  readonly ids: string[];
  readonly sealed: ReplyState['sealed'];
  /** What the live message starts with after a split (a reopened code fence). */
  carry: string;
  /** What each message shows right now, as far as we know. */
  readonly shown: string[];
  /** Which buttons each message shows right now (their values joined; '' for none), as far as we know. */
  readonly buttonsShown: string[] = [];

  constructor(target: ReplyTarget, initial: ReplyState | undefined) {
    this.ids = [...(initial?.messageIds ?? (target.messageId ? [target.messageId] : []))];
    this.sealed = [...(initial?.sealed ?? [])];
    this.carry = initial?.carry ?? '';
    this.shown = this.sealed.map((s) => s.shown);
  }

  /** The index of the message still being written. */
  get liveIndex(): number {
    return this.sealed.length;
  }

  /** How much of the reply text the sealed messages cover. */
  get sealedLength(): number {
    return this.sealed.reduce((n, s) => n + s.length, 0);
  }

  /** The text of the message still being written, given the whole reply `text`. */
  live(text: string): string {
    const rest = text.slice(this.sealedLength);
    return this.carry ? this.carry + rest.replace(/^\n/, '') : this.sealed.length > 0 ? rest.replace(/^\s+/, '') : rest;
  }

  snapshot(): Pick<ReplyState, 'messageIds' | 'sealed' | 'carry'> {
    return { messageIds: [...this.ids], sealed: [...this.sealed], carry: this.carry };
  }
}
