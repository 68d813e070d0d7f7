import type { WebAPIPlatformError, WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { metrics } from '../../metrics.ts';
import type { PostedMessage } from '../../reply/outbound.ts';
import type { TaskUpdate } from '../../reply/delivery.ts';
import { StreamingUnavailable, type NativeStreaming } from './native-delivery.ts';
import { type ReplyButton, type ReplyTarget } from '../../core/reply-target.ts';
import { feedbackBlock } from './blocks.ts';
import type { BucketShape, RateBuckets } from '../../reply/rate-bucket.ts';
import { neutralizeMarkdownMentions } from './format/index.ts';
import { LIMITS } from './limits.ts';
import { rateLimitedError } from './api-errors.ts';

/**
 * Per-workspace budgets under the methods' tiers (chat.startStream and chat.stopStream are Tier 2,
 * about 20 a minute; chat.appendStream Tier 4, 100+): a burst plus a minute of refill stays inside.
 */
function budget(perMinute: number): BucketShape {
  const capacity = Math.max(1, Math.floor(perMinute / LIMITS.streamBurstDivisor));
  return { capacity, refillPerSecond: (perMinute - capacity) / 60 };
}
const APPENDS = budget(LIMITS.appendStreamBudgetPerMinute);

/** A chunk's text, cut to what Slack takes. */
const cut = (text: string) => text.slice(0, LIMITS.streamChunkText);

/**
 * Task updates as Slack's `task_update` chunks (a timeline card per tool call), the model's plan as a
 * `plan_update` (the timeline's title). Texts are cut to the documented length.
 */
function chunksOf(tasks: readonly TaskUpdate[] | undefined): { chunks?: Array<Record<string, string>> } {
  if (!tasks?.length) return {};
  return {
    chunks: tasks.map((t) =>
      t.kind === 'plan'
        ? { type: 'plan_update', title: cut(t.title) }
        : {
            type: 'task_update',
            id: cut(t.id),
            title: cut(t.title),
            status: t.status,
            ...(t.details ? { details: cut(t.details) } : {}),
          },
    ),
  };
}

/** Errors after which the stream is over for good; anything else (network, 5xx) is retried. */
const STREAM_GONE = new Set([
  'message_not_in_streaming_state',
  'message_not_found',
  'cant_update_message',
  'unknown_method',
  'method_deprecated',
  'not_allowed_token_type',
  'missing_scope',
  'channel_not_found',
  'is_archived',
]);

/**
 * Slack's native streaming (chat.startStream / appendStream / stopStream) for NativeDelivery.
 * Unlike chat.postMessage, none of the three documents `unfurl_links` / `unfurl_media`, so streams
 * are sent without them (see NO_UNFURLS in outbound.ts); a method's strict argument check could
 * otherwise refuse every stream.
 * Streams are threaded replies to the person who asked; a stream that cannot start (no thread, no
 * budget left this minute, the method missing) makes the reply fall back to posting and editing.
 */
export class SlackNativeStreaming implements NativeStreaming {
  readonly maxAgeMs: number;
  // markdown_text holds 12,000 characters a call; mention neutralizing adds a little.
  readonly maxLength = LIMITS.streamMarkdownText - LIMITS.streamRolloverMargin;
  readonly #client: WebClient;
  readonly #buckets: RateBuckets;
  readonly #log: Logger;
  readonly #starts: BucketShape;
  readonly #stops: BucketShape;
  /** Workspaces where Slack said the methods don't exist (GovSlack, proxies): asked again after a while. */
  readonly #unsupportedUntil = new Map<string, number>();

  constructor(
    client: WebClient,
    buckets: RateBuckets,
    log: Logger,
    options: { maxAgeMs: number; startsPerMinute: number },
  ) {
    // Every stream started is stopped once, so stops get the same budget.
    this.#starts = budget(options.startsPerMinute);
    this.#stops = budget(options.startsPerMinute);
    this.#client = client;
    this.#buckets = buckets;
    this.#log = log.child({ component: 'slack-streaming' });
    this.maxAgeMs = options.maxAgeMs;
  }

  #key(target: ReplyTarget, method: string): string {
    return `slack:${target.workspace ?? 'default'}:${method}`;
  }

  async start(target: ReplyTarget, text: string, tasks?: readonly TaskUpdate[]): Promise<PostedMessage | undefined> {
    const workspace = target.workspace ?? 'default';
    if (!target.thread || (this.#unsupportedUntil.get(workspace) ?? 0) > Date.now()) return undefined;
    const isDm = target.channel.startsWith('D');
    if (!isDm && !(target.recipient && target.workspace)) return undefined;
    if (!(await this.#buckets.tryTake(this.#key(target, 'chat.startStream'), this.#starts))) return undefined;
    try {
      const result = await this.#client.chat.startStream({
        channel: target.channel,
        thread_ts: target.thread,
        markdown_text: neutralizeMarkdownMentions(text),
        ...chunksOf(tasks),
        ...(target.recipient && target.workspace
          ? { recipient_user_id: target.recipient, recipient_team_id: target.workspace }
          : {}),
      } as Parameters<WebClient['chat']['startStream']>[0]);
      return { messageId: String(result.ts) };
    } catch (error) {
      const code = (error as WebAPIPlatformError).data?.error;
      if (code === 'unknown_method' || code === 'method_deprecated')
        this.#unsupportedUntil.set(workspace, Date.now() + LIMITS.streamUnsupportedRecheckMs);
      // Posting a message instead is always possible; a stream is only nicer.
      this.#log.warn({ err: error, code }, 'chat.startStream failed; replying by editing instead');
      return undefined;
    }
  }

  async reserveAppend(target: ReplyTarget): Promise<void> {
    await this.#buckets.wait(this.#key(target, 'chat.appendStream'), APPENDS);
  }

  async append(
    target: ReplyTarget,
    messageId: string,
    text: string,
    reserved = false,
    tasks?: readonly TaskUpdate[],
  ): Promise<void> {
    if (!reserved) await this.reserveAppend(target);
    await this.#call('chat.appendStream', () =>
      this.#client.chat.appendStream({
        channel: target.channel,
        ts: messageId,
        ...(text || !tasks?.length ? { markdown_text: neutralizeMarkdownMentions(text) } : {}),
        ...chunksOf(tasks),
      } as Parameters<WebClient['chat']['appendStream']>[0]),
    );
  }

  async stop(
    target: ReplyTarget,
    messageId: string,
    text?: string,
    buttons?: ReplyButton[],
    tasks?: readonly TaskUpdate[],
  ): Promise<void> {
    const blocks = buttons?.length ? feedbackBlock(buttons) : [];
    await this.#buckets.wait(this.#key(target, 'chat.stopStream'), this.#stops);
    await this.#call('chat.stopStream', () =>
      this.#client.chat.stopStream({
        channel: target.channel,
        ts: messageId,
        ...(text ? { markdown_text: neutralizeMarkdownMentions(text) } : {}),
        ...chunksOf(tasks),
        ...(blocks.length ? { blocks } : {}),
      } as Parameters<WebClient['chat']['stopStream']>[0]),
    );
  }

  async remove(target: ReplyTarget, messageId: string): Promise<void> {
    try {
      await this.#call('chat.delete', () => this.#client.chat.delete({ channel: target.channel, ts: messageId }));
    } catch (error) {
      // Already gone (deleted by a person) is what we wanted.
      if (!(error instanceof StreamingUnavailable)) throw error;
    }
  }

  async #call<T>(method: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      const limited = rateLimitedError(error, method);
      if (limited) throw limited;
      const code = (error as WebAPIPlatformError).data?.error;
      if (code && STREAM_GONE.has(code)) throw new StreamingUnavailable(`${method}: ${code}`, { cause: error });
      metrics.platformErrors.inc({ platform: 'slack' });
      throw error;
    }
  }
}
