import type { Outbound, OutboundFile, OutboundLimits, PostedMessage, ReplyOptions } from '../../src/reply/outbound.ts';
import type { ReplyTarget } from '../../src/core/reply-target.ts';
import type { FileRef } from '../../src/core/work-item.ts';

export interface RecordedMessage {
  id: string;
  channel: string;
  text: string;
  edits: number;
  buttons: ReplyOptions['buttons'];
}

/** A chat platform that keeps every message in memory: the simplest protocol peer for pipeline tests. */
export class RecordingOutbound implements Outbound {
  readonly platform: string;
  readonly limits: OutboundLimits;
  readonly messages = new Map<string, RecordedMessage>();
  /** Files shared, in order. */
  readonly uploads: Array<OutboundFile & { channel: string; thread?: string }> = [];
  calls = 0;
  #next = 1;
  /** Make the next N calls fail (a platform outage or 429). */
  failNext = 0;
  failWith: Error & { retryAfterMs?: number } = new Error('platform unavailable');

  constructor(platform = 'test', limits: Partial<OutboundLimits> = {}) {
    this.platform = platform;
    this.limits = { maxMessageLength: 4000, minEditIntervalMs: 20, ...limits };
  }

  #maybeFail(): void {
    this.calls += 1;
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw this.failWith;
    }
  }

  async post(target: ReplyTarget, text: string, options?: ReplyOptions): Promise<PostedMessage> {
    this.#maybeFail();
    if (text.length > this.limits.maxMessageLength) throw new Error(`message too long: ${text.length}`);
    const id = `m${this.#next++}`;
    this.messages.set(id, { id, channel: target.channel, text, edits: 0, buttons: options?.buttons });
    return { messageId: id };
  }

  async edit(_target: ReplyTarget, messageId: string, text: string, options?: ReplyOptions): Promise<void> {
    this.#maybeFail();
    if (text.length > this.limits.maxMessageLength) throw new Error(`message too long: ${text.length}`);
    const message = this.messages.get(messageId);
    if (!message) throw new Error(`unknown message ${messageId}`);
    message.text = text;
    message.edits += 1;
    message.buttons = options?.buttons;
  }

  /** Files people "sent", by id, that `download` serves; an Error fails that download. */
  readonly files = new Map<string, Buffer | Error>();

  async download(file: FileRef, { maxBytes }: { maxBytes: number }): Promise<Buffer> {
    const bytes = this.files.get(file.id);
    if (!bytes) throw new Error(`no file ${file.id}`);
    if (bytes instanceof Error) throw bytes;
    return bytes.subarray(0, maxBytes + 1);
  }

  /** The files of a message whose event carried none (`filesOfMessage`), by message id, for `messageFiles`. */
  readonly messageFileRefs = new Map<string, FileRef[]>();

  async messageFiles(_target: ReplyTarget, messageId: string): Promise<FileRef[]> {
    return this.messageFileRefs.get(messageId) ?? [];
  }

  async upload(target: ReplyTarget, file: OutboundFile): Promise<void> {
    this.#maybeFail();
    this.uploads.push({ ...file, channel: target.channel, ...(target.thread ? { thread: target.thread } : {}) });
  }

  /** Visible text of a channel's messages in posting order. */
  channelText(channel: string): string[] {
    return [...this.messages.values()].filter((m) => m.channel === channel).map((m) => m.text);
  }
}
