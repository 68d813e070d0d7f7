import type { Logger } from 'pino';
import type { ReplyButton, ReplyTarget } from '../core/reply-target.ts';
import type { PartialEdit } from './rate-bucket.ts';
import type { ReplyState } from './reply-state.ts';

/** What an empty reply shows: the inbound adapters post it as the placeholder too. */
export const PLACEHOLDER = '…';

/**
 * The reply as the pump sees it right now. Read it afresh after every await: the model keeps
 * writing (and the turn may finish) while a platform call is in flight.
 */
/**
 * One step of the turn (a tool call), as a platform with a task timeline shows it; or, with `kind:
 * 'plan'`, the plan the model stated before its tool calls (the timeline's heading).
 */
export interface TaskUpdate {
  id: string;
  kind?: 'plan';
  title: string;
  status: 'in_progress' | 'complete' | 'error';
  /** A short line under the title (e.g. the grant a call ran under); at most 256 characters. */
  details?: string;
}

export interface ReplyView {
  /** The whole text so far. */
  readonly text: string;
  /** The turn's steps so far, in the order they started, each in its latest state. */
  readonly tasks?: readonly TaskUpdate[];
  readonly status: string | undefined;
  readonly finished: boolean;
  /** The live buttons while the turn runs (once they are due); once finished, the answer's own (feedback). */
  readonly buttons: ReplyButton[] | undefined;
}

/** Everything a delivery is built from for one reply, besides the platform's Outbound. */
export interface DeliveryContext {
  target: ReplyTarget;
  log: Logger;
  /** Where a previous worker left the reply (a resumed turn). */
  initial?: ReplyState;
  /** Called after every successful platform call, with the text now visible. */
  onDelivered?: (visibleText: string) => void;
}

/**
 * One way of making a platform show a reply (editing messages in place, a platform's native
 * stream). The pump (ReplyStream) decides when to call and retries failures; a delivery decides
 * which platform calls show the current view.
 */
export interface ReplyDelivery {
  /** When the last call that counts against the platform's edit interval was made (ms epoch). */
  readonly lastEditAt: number;
  /**
   * Whether a sync would send nothing. Errs towards false: a false only costs a sync that finds
   * nothing to do.
   */
  upToDate(view: ReplyView): boolean;
  /**
   * Waits for, and takes, the rate token of the next call, where one is due (see Outbound.reserve);
   * aborted by `signal`, the token is given back and the call throws. `partial`: the call will show
   * a partial text, and waits behind cards and finals (see PartialEdit).
   */
  reserve(view: ReplyView, signal?: AbortSignal, partial?: PartialEdit): Promise<void>;
  /** A call failed: a token taken by reserve was spent on it. */
  forgetReservation(): void;
  /** Makes the platform show the view; throws to be retried with the newest text. */
  sync(view: ReplyView): Promise<void>;
  snapshot(): ReplyState;
}
