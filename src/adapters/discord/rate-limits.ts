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

/** Discord's documented budgets, as buckets. */
/**
 * Discord counts a channel's message writes in a fixed window (5 per 5 s). A token bucket allows its
 * burst plus a window's refill inside one window, so the two are split to sum to the window's limit:
 * capacity + refill × window ≤ 5 — never a 429 from a full burst followed by steady refills.
 */
const EDIT_BURST = 2;
/**
 * The global limit is a 1-second window, split the same way, with headroom: a token is taken before
 * the request leaves, and under load (a burst of approvals, P9) a request can reach Discord up to
 * ~100 ms later, inside the next window, beside that window's own full share. 10 at once, then 35
 * a second, keeps any window under 50 even then.
 */
const GLOBAL_BURST = 10;
const GLOBAL_REFILL_PER_SECOND = 35;
export const DISCORD_BUCKETS = {
  channelEdit: {
    capacity: EDIT_BURST,
    refillPerSecond: (LIMITS.channelEditsPerWindow - EDIT_BURST) / LIMITS.channelEditWindowSeconds,
  },
  global: { capacity: GLOBAL_BURST, refillPerSecond: GLOBAL_REFILL_PER_SECOND },
} as const satisfies Record<string, BucketShape>;

export const channelEditBucketKey = (channelId: string): string => `discord:edit:${channelId}`;
export const globalBucketKey = (applicationId: string): string => `discord:global:${applicationId}`;

export { takeToken, waitForToken, type BucketShape } from '../../reply/rate-bucket.ts';
