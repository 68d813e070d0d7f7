import type { ApprovalCard } from '../core/approval-card.ts';
import type { ReplyButton, ReplyTarget } from '../core/reply-target.ts';

export interface PostedMessage {
  messageId: string;
}

export interface ReplyOptions {
  buttons?: ReplyButton[];
  /** The caller already took this edit's rate token with `reserve`. */
  reserved?: boolean;
}

export interface OutboundLimits {
  /** Text longer than this continues in a new message. */
  maxMessageLength: number;
  /** Minimum time between two edits of one reply. */
  minEditIntervalMs: number;
}

/**
 * A platform's own append-only streaming (Slack's chat.startStream / appendStream / stopStream).
 * Text sent cannot be taken back, so the reply stream uses it only while the text grows, and falls
 * back to edits (see StreamingUnavailable) when it cannot.
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
  start(target: ReplyTarget, text: string): Promise<PostedMessage | undefined>;
  /** Waits for, and takes, the rate token of the next append (newest text wins, as with reserve). */
  reserveAppend(target: ReplyTarget): Promise<void>;
  /** Appends `text`; `reserved`: the caller already took the token with reserveAppend. */
  append(target: ReplyTarget, messageId: string, text: string, reserved?: boolean): Promise<void>;
  /** Ends the stream, appending `text` first. */
  stop(target: ReplyTarget, messageId: string, text?: string): Promise<void>;
  /** Deletes a message (the placeholder that carried status and Stop while the answer streamed). */
  remove(target: ReplyTarget, messageId: string): Promise<void>;
}

/** A native stream refused a call for good (stream expired, method gone): edit the message instead. */
export class StreamingUnavailable extends Error {
  override readonly name = 'StreamingUnavailable';
}

/** The speaking half of an adapter: a plain API client any worker process can use. */
export interface Outbound {
  readonly platform: string;
  readonly limits: OutboundLimits;
  post(target: ReplyTarget, text: string, options?: ReplyOptions): Promise<PostedMessage>;
  edit(target: ReplyTarget, messageId: string, text: string, options?: ReplyOptions): Promise<void>;
  /**
   * Waits for, and takes, the rate token of the next edit to `target`. Streams call it before they
   * decide what text to send, so that under a tight budget only the newest text is sent.
   */
  reserve?(target: ReplyTarget): Promise<void>;
  /**
   * Shows (or, with `messageId`, updates in place) an approval card in the platform's own UI.
   * Platforms without one get the card as text with buttons through post/edit.
   */
  showApprovalCard?(target: ReplyTarget, card: ApprovalCard, messageId?: string): Promise<PostedMessage>;
  /** Native streaming, where the platform has it and it is enabled. */
  readonly streaming?: NativeStreaming;
}

/** Looks up the outbound client for a reply target's platform. */
export class OutboundRegistry {
  readonly #byPlatform = new Map<string, Outbound>();

  register(outbound: Outbound): void {
    this.#byPlatform.set(outbound.platform, outbound);
  }

  for(target: ReplyTarget): Outbound {
    const outbound = this.#byPlatform.get(target.platform);
    if (!outbound) {
      throw new Error(
        `No outbound client for platform "${target.platform}" in this process; is its adapter configured?`,
      );
    }
    return outbound;
  }
}
