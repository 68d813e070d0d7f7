import type { Outbound, OutboundFile, PostedMessage } from '../../reply/outbound.ts';
import type { ReplyTarget } from '../../core/reply-target.ts';
import type { FileRef } from '../../core/work-item.ts';
import { readLocalFile } from './local-file.ts';

/** Control characters (ESC first: it could move the cursor and redraw a card) and direction overrides. */
// Matching control characters is the point here.
// eslint-disable-next-line no-control-regex
const UNSAFE_FOR_TERMINAL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Text a terminal prints as it is: whatever could steer the terminal is shown as `⟨U+001B⟩`. */
export function terminalSafe(text: string): string {
  return text.replace(
    UNSAFE_FOR_TERMINAL,
    (c) => `⟨U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}⟩`,
  );
}

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

  async post(target: ReplyTarget, raw: string): Promise<PostedMessage> {
    const text = terminalSafe(raw);
    const messageId = `console-${this.#next++}`;
    this.#messages.set(messageId, { target, text });
    this.#listener?.(messageId, text, target);
    return { messageId };
  }

  async edit(target: ReplyTarget, messageId: string, raw: string): Promise<void> {
    const text = terminalSafe(raw);
    this.#messages.set(messageId, { target, text });
    this.#listener?.(messageId, text, target);
  }

  /**
   * A shared file, printed whole as a message of its own: the comment, the file's name, then its
   * content read as UTF-8. It is the operator's terminal, so nothing is cut; what could steer the
   * terminal is shown, not sent, as in every other message.
   */
  async upload(target: ReplyTarget, file: OutboundFile): Promise<void> {
    const body = file.content.toString('utf8');
    const lines = [
      ...(file.comment ? [file.comment] : []),
      `── ${file.filename} (${file.content.length} bytes) ──`,
      body.endsWith('\n') ? body.slice(0, -1) : body,
      `── end of ${file.filename} ──`,
    ];
    await this.post(target, lines.join('\n'));
  }

  /** A file attached with `/attach PATH`: read from the operator's disk. */
  async download(file: FileRef, options: { maxBytes: number }): Promise<Buffer> {
    return readLocalFile(file, options);
  }

  text(messageId: string): string | undefined {
    return this.#messages.get(messageId)?.text;
  }
}
