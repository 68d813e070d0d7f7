import type { ReplyState } from './reply-state.ts';
import type { TaskUpdate } from './delivery.ts';

/**
 * Where a turn's reply text goes as the model writes it. The agent loop depends on this, not on how
 * the text reaches a platform (see ReplyStream).
 */
export interface ReplySink {
  /** The whole reply text so far. */
  readonly text: string;
  /** Where the reply stands on the platform, for the turn's checkpoint. */
  snapshot(): ReplyState;
  /** Restores the text a resumed turn had already produced, without re-sending what is visible. */
  restoreText(text: string): void;
  /** Marks where the current model round's text starts. */
  beginRound(): void;
  /** Forgets the text of the current round (it is about to be streamed again). */
  restartRound(): void;
  append(delta: string): void;
  /** A progress line (e.g. "Running `deploy`…") shown with the text until the turn finishes. */
  setStatus(status: string | undefined): void;
  /** A step of the turn started or ended, for platforms that show a task timeline (Slack streams). */
  task?(update: TaskUpdate): void;
  /** Shows the complete text (optionally replaced) without status or live buttons; resolves when visible. */
  finish(finalText?: string): Promise<void>;
}
