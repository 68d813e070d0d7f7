/**
 * Slack's HTTP delivery to an app's Request URL: Events API callbacks as JSON, slash commands as
 * a form, interactivity as a form with one `payload=` field holding JSON. Every request is signed:
 * `X-Slack-Signature: v0=hex(HMAC_SHA256(signing_secret, "v0:{timestamp}:{raw body}"))` with the
 * timestamp (Unix seconds) in `X-Slack-Request-Timestamp`. Retries add `X-Slack-Retry-Num` and
 * `X-Slack-Retry-Reason`.
 */
import { createHmac } from 'node:crypto';

/** The X-Slack-Retry-Reason values Slack documents. */
type SlackRetryReason =
  'http_timeout' | 'http_error' | 'connection_failed' | 'ssl_error' | 'too_many_redirects' | 'unknown_error';

export type HttpDelivery =
  /** An Events API body (event_callback, url_verification). */
  | { json: unknown }
  /** Slash command fields. */
  | { form: Record<string, string> }
  /** An interaction payload (block_actions, view_submission, …), sent as `payload=<json>`. */
  | { interaction: unknown };

export interface HttpDeliveryOptions {
  signingSecret: string;
  /** Marks the request as Slack's nth retry. */
  retryNum?: number;
  retryReason?: SlackRetryReason;
  /** Sign with this Unix time instead of now (to test replay protection). */
  timestampSeconds?: number;
  /** Send a signature that does not match the body. */
  badSignature?: boolean;
  /** Abort the request after this long (Slack waits 3 s for a response). */
  timeoutMs?: number;
  /** Send the body in chunks split at these byte offsets (to test decoding across TCP chunks). */
  splitAt?: number[];
}

export interface HttpDeliveryResult {
  status: number;
  text: string;
  headers: Record<string, string>;
}

export function slackSignature(signingSecret: string, timestampSeconds: number | string, rawBody: string): string {
  return `v0=${createHmac('sha256', signingSecret).update(`v0:${timestampSeconds}:${rawBody}`).digest('hex')}`;
}

export function encodeDelivery(delivery: HttpDelivery): { contentType: string; body: string } {
  if ('json' in delivery) return { contentType: 'application/json', body: JSON.stringify(delivery.json) };
  if ('form' in delivery)
    return { contentType: 'application/x-www-form-urlencoded', body: new URLSearchParams(delivery.form).toString() };
  return {
    contentType: 'application/x-www-form-urlencoded',
    body: new URLSearchParams({ payload: JSON.stringify(delivery.interaction) }).toString(),
  };
}

/** POSTs a delivery to an app's Request URL, signed as Slack signs it. */
export async function postToApp(
  url: string,
  delivery: HttpDelivery,
  options: HttpDeliveryOptions,
): Promise<HttpDeliveryResult> {
  const { contentType, body } = encodeDelivery(delivery);
  const timestamp = options.timestampSeconds ?? Math.floor(Date.now() / 1000);
  const signature = options.badSignature
    ? slackSignature(`${options.signingSecret}-wrong`, timestamp, body)
    : slackSignature(options.signingSecret, timestamp, body);
  const bytes = Buffer.from(body, 'utf8');
  const cuts = [...(options.splitAt ?? [])].sort((a, b) => a - b);
  const parts = [0, ...cuts, bytes.length].slice(1).map((end, i, ends) => bytes.subarray(i ? ends[i - 1] : 0, end));
  const res = await fetch(url, {
    method: 'POST',
    ...(options.timeoutMs ? { signal: AbortSignal.timeout(options.timeoutMs) } : {}),
    headers: {
      'content-type': contentType,
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': signature,
      ...(options.retryNum
        ? {
            'x-slack-retry-num': String(options.retryNum),
            'x-slack-retry-reason': options.retryReason ?? 'http_timeout',
          }
        : {}),
    },
    ...(cuts.length
      ? {
          // A stream that yields each part separately: Node's fetch writes them as separate chunks.
          body: new ReadableStream<Uint8Array>({
            async pull(controller) {
              const next = parts.shift();
              if (next === undefined) return controller.close();
              controller.enqueue(new Uint8Array(next));
              await new Promise((r) => setTimeout(r, 10));
            },
          }),
          duplex: 'half',
        }
      : { body }),
  } as RequestInit);
  return { status: res.status, text: await res.text(), headers: Object.fromEntries(res.headers) };
}

export interface RetryPolicy {
  /**
   * Waits before each retry. Slack retries a failed delivery 3 times: nearly at once, after 1
   * minute and after 5 minutes; tests pass shorter waits. Default: three retries, 100 ms apart.
   */
  delaysMs?: number[];
  /** How long Slack waits for a response before it counts the delivery as failed (Slack: 3 s). */
  timeoutMs?: number;
  /** Called before each retry, e.g. to restore a database a test cut. */
  beforeRetry?: (retryNum: number) => Promise<void> | void;
}

export interface DeliveryAttempt extends Partial<HttpDeliveryResult> {
  retryNum: number;
  retryReason?: SlackRetryReason;
  /** Set when no response came (timeout, refused connection). */
  failure?: string;
}

/**
 * Delivers an Events API request as Slack does: a response other than 2xx, or none within the
 * timeout, counts as a failure and the same body is sent again with X-Slack-Retry-Num (1, 2, 3) and
 * X-Slack-Retry-Reason, until one succeeds or the retries run out. Resolves with every attempt.
 */
export async function deliverWithRetries(
  url: string,
  delivery: HttpDelivery,
  options: HttpDeliveryOptions & RetryPolicy,
): Promise<DeliveryAttempt[]> {
  const delays = options.delaysMs ?? [100, 100, 100];
  const timeoutMs = options.timeoutMs ?? 3000;
  const attempts: DeliveryAttempt[] = [];
  let reason: SlackRetryReason | undefined;
  for (let retryNum = 0; retryNum <= delays.length; retryNum++) {
    if (retryNum > 0) {
      await new Promise((r) => setTimeout(r, delays[retryNum - 1]));
      await options.beforeRetry?.(retryNum);
    }
    try {
      const result = await postToApp(url, delivery, {
        ...options,
        timeoutMs,
        ...(retryNum > 0 ? { retryNum, retryReason: reason ?? 'unknown_error' } : {}),
      });
      attempts.push({ retryNum, ...(reason && retryNum > 0 ? { retryReason: reason } : {}), ...result });
      if (result.status >= 200 && result.status < 300) return attempts;
      reason = 'http_error';
    } catch (error) {
      const timedOut = (error as Error).name === 'TimeoutError';
      attempts.push({ retryNum, failure: String((error as Error).message) });
      reason = timedOut ? 'http_timeout' : 'connection_failed';
    }
  }
  return attempts;
}
