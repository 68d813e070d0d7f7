import type { BucketShape } from '../../reply/rate-bucket.ts';
import { LIMITS } from './limits.ts';

/**
 * A token bucket in Postgres, shared by every worker process that talks to Discord. Discord
 * limits a bot as a whole (50 requests/s) and each channel's message edits (≈5 per 5 s), but a
 * reply is streamed by whichever worker picked up the turn: without a shared budget, ten workers
 * each pacing themselves would still hit 429s together.
 *
 * Table (created by a migration, shared with the Slack adapter — not created here):
 *   countersign.rate_buckets(key text primary key, tokens double precision, updated_at timestamptz)
 */

/**
 * Discord's documented budgets, as buckets. Discord counts a channel's message writes (5 per 5 s)
 * and a bot's requests (50 per second) in fixed windows; each bucket's burst and refill are split so
 * that capacity + refill × window stays within the window's limit (the split: limits.ts).
 */
export const DISCORD_BUCKETS = {
  channelEdit: {
    capacity: LIMITS.channelEditBurst,
    refillPerSecond: (LIMITS.channelEditsPerWindow - LIMITS.channelEditBurst) / LIMITS.channelEditWindowSeconds,
  },
  global: { capacity: LIMITS.globalBurst, refillPerSecond: LIMITS.globalRefillPerSecond },
} as const satisfies Record<string, BucketShape>;

export const channelEditBucketKey = (channelId: string): string => `discord:edit:${channelId}`;
export const globalBucketKey = (applicationId: string): string => `discord:global:${applicationId}`;

export { takeToken, waitForToken, type BucketShape } from '../../reply/rate-bucket.ts';
