/**
 * Slack's HTTP delivery to an app's Request URL: Events API callbacks as JSON, slash commands as
 * a form, interactivity as a form with one `payload=` field holding JSON. Every request is signed:
 * `X-Slack-Signature: v0=hex(HMAC_SHA256(signing_secret, "v0:{timestamp}:{raw body}"))` with the
 * timestamp (Unix seconds) in `X-Slack-Request-Timestamp`. Retries add `X-Slack-Retry-Num` and
 * `X-Slack-Retry-Reason`.
 */
import { createHmac } from 'node:crypto';

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
  retryReason?: 'http_timeout' | 'http_error' | 'too_many_redirects' | 'unknown_error';
  /** Sign with this Unix time instead of now (to test replay protection). */
  timestampSeconds?: number;
  /** Send a signature that does not match the body. */
  badSignature?: boolean;
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
  const res = await fetch(url, {
    method: 'POST',
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
    body,
  });
  return { status: res.status, text: await res.text(), headers: Object.fromEntries(res.headers) };
}
