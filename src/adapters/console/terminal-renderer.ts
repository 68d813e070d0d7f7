/** What stands between two messages of one turn on screen (and in piped output). */
export const MESSAGE_SEPARATOR = '\n\n';

/**
 * Renders a streaming reply in a terminal: appended text is written as it arrives; when earlier text
 * changes (a status line disappears, a round is retried) the reply's lines are erased and redrawn.
 */
export class TerminalRenderer {
  readonly #out: NodeJS.WriteStream;
  #shown = '';
  #messageId: string | undefined;

  constructor(out: NodeJS.WriteStream) {
    this.#out = out;
  }

  /** Starts a new reply below whatever is on screen. */
  begin(): void {
    this.#shown = '';
    this.#messageId = undefined;
  }

  /** Ends the current reply so the prompt goes on a line of its own. */
  end(): void {
    if (this.#shown && !this.#shown.endsWith('\n')) this.#out.write('\n');
    this.begin();
  }

  show(messageId: string, text: string): void {
    if (this.#messageId !== undefined && messageId !== this.#messageId) {
      // Another message (a continuation, an approval card): keep the previous one on screen.
      this.#out.write(MESSAGE_SEPARATOR);
      this.#shown = '';
    }
    this.#messageId = messageId;
    if (text.startsWith(this.#shown)) {
      this.#out.write(text.slice(this.#shown.length));
    } else {
      this.#erase();
      this.#out.write(text);
    }
    this.#shown = text;
  }

  #erase(): void {
    const columns = this.#out.columns || 80;
    const rows = this.#shown.split('\n').reduce((n, line) => n + Math.max(1, Math.ceil(line.length / columns)), 0);
    // Move to the start of the reply's first row and clear everything below.
    this.#out.write(rows > 1 ? `\r\x1b[${rows - 1}A\x1b[J` : '\r\x1b[J');
  }
}
