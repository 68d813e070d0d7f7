import type { Outbound, PostedMessage } from '../../reply/outbound.ts';
import type { ReplyTarget } from '../../core/reply-target.ts';

/**
 * The console's speaking half. Messages live in memory; whoever owns the terminal subscribes to
 * changes and renders them (interactively as they stream, or only the final text when piped).
 */
export class ConsoleOutbound implements Outbound {
  readonly platform = 'console';
  // A terminal takes long text and fast redraws; the interval only keeps redraws from flickering.
  readonly limits = { maxMessageLength: 100_000, minEditIntervalMs: 30 };
  readonly #messages = new Map<string, { target: ReplyTarget; text: string }>();
  #next = 1;
  #listener: ((messageId: string, text: string, target: ReplyTarget) => void) | undefined;

  onChange(listener: (messageId: string, text: string, target: ReplyTarget) => void): void {
    this.#listener = listener;
  }

  async post(target: ReplyTarget, text: string): Promise<PostedMessage> {
    const messageId = `console-${this.#next++}`;
    this.#messages.set(messageId, { target, text });
    this.#listener?.(messageId, text, target);
    return { messageId };
  }

  async edit(target: ReplyTarget, messageId: string, text: string): Promise<void> {
    this.#messages.set(messageId, { target, text });
    this.#listener?.(messageId, text, target);
  }

  text(messageId: string): string | undefined {
    return this.#messages.get(messageId)?.text;
  }
}
