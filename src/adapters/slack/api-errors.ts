import { z } from 'zod';
import { ErrorCode, type WebAPIRateLimitedError } from '@slack/web-api';
import { metrics } from '../../metrics.ts';

/**
 * A Web API rate limit as the reply stream understands it: an error carrying `retryAfterMs`, so the
 * stream waits exactly as long as Slack asked and then sends the newest text. Counted once here.
 * Returns undefined for any other error.
 */
export function rateLimitedError(error: unknown, method: string): Error | undefined {
  if ((error as { code?: string }).code !== ErrorCode.RateLimitedError) return undefined;
  metrics.platformRateLimited.inc({ platform: 'slack', method });
  const seconds = (error as WebAPIRateLimitedError).retryAfter;
  return Object.assign(new Error(`Slack rate limited ${method}`), { retryAfterMs: seconds * 1000 });
}

const SlackApiError = z.object({ data: z.object({ error: z.string() }) });

/** The `error` code of a failed Web API call (`not_in_channel`, `missing_scope`, …), if it is one. */
export function slackErrorOf(error: unknown): string | undefined {
  return SlackApiError.safeParse(error).data?.data.error;
}
