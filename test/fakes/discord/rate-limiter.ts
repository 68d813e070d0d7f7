/**
 * Discord's rate limiting as the fake enforces it (API v10 "Rate Limits" topic): per-route
 * buckets keyed by the route's major parameter (channel, guild, webhook), a global 50 req/s
 * limit that interaction endpoints are exempt from, the X-RateLimit-* headers on every response
 * and the 429 body `{ message, retry_after, global }`. Tests can also force 429s and read
 * counters of calls and 429s per route.
 */
import { createHash } from 'node:crypto';

export interface BucketRule {
  limit: number;
  windowSeconds: number;
}

/** Route keys are `METHOD /template`, e.g. `PATCH /channels/:channel_id/messages/:message_id`. */
export type RouteKey = string;

/** The per-channel message buckets bots observe in practice; every other route gets a generous default. */
export const DEFAULT_BUCKETS: Record<RouteKey, BucketRule> = {
  'POST /channels/:channel_id/messages': { limit: 5, windowSeconds: 5 },
  'PATCH /channels/:channel_id/messages/:message_id': { limit: 5, windowSeconds: 5 },
  'DELETE /channels/:channel_id/messages/:message_id': { limit: 5, windowSeconds: 1 },
};
const FALLBACK_BUCKET: BucketRule = { limit: 50, windowSeconds: 1 };
export const GLOBAL_PER_SECOND = 50;

export interface ForcedLimit {
  /** Calls to let through before the forced 429s start. */
  skip: number;
  remaining: number;
  retryAfterSeconds: number;
  global: boolean;
}

export interface RateDecision {
  headers: Record<string, string>;
  /** Set when the request must be answered with 429 instead of being handled. */
  tooManyRequests?: { retry_after: number; global: boolean; message: string };
  /** Why it was limited: a forced 429 from a test, or the client really overran the budget. */
  cause?: 'forced' | 'bucket' | 'global';
}

export interface CallRecord {
  route: RouteKey;
  major: string;
  at: number;
  status: number;
  cause?: RateDecision['cause'];
}

interface Window {
  count: number;
  resetAt: number;
}

export class FakeRateLimiter {
  readonly #rules: Record<RouteKey, BucketRule>;
  readonly #windows = new Map<string, Window>();
  readonly #forced = new Map<RouteKey, ForcedLimit>();
  #global: Window = { count: 0, resetAt: 0 };
  /** Every request the fake answered, in order. */
  readonly calls: CallRecord[] = [];

  constructor(rules: Record<RouteKey, BucketRule> = {}) {
    this.#rules = { ...DEFAULT_BUCKETS, ...rules };
  }

  /** Changes one route's bucket (e.g. a tighter limit for a test). */
  setBucket(route: RouteKey, rule: BucketRule): void {
    this.#rules[route] = rule;
  }

  /**
   * The next `count` calls to `route` (after letting `after` calls through) are answered 429 with
   * `retry_after: retryAfterSeconds`.
   */
  failNext(
    route: RouteKey,
    options: { count?: number; retryAfterSeconds: number; global?: boolean; after?: number },
  ): void {
    this.#forced.set(route, {
      skip: options.after ?? 0,
      remaining: options.count ?? 1,
      retryAfterSeconds: options.retryAfterSeconds,
      global: options.global ?? false,
    });
  }

  /** Decides one request: counts it against its bucket (and the global limit) and builds headers. */
  decide(route: RouteKey, major: string, exemptFromGlobal: boolean, now = Date.now()): RateDecision {
    const rule = this.#rules[route] ?? FALLBACK_BUCKET;
    const bucketHash = createHash('sha1').update(route).digest('hex').slice(0, 16);
    const key = `${route}|${major}`;
    let w = this.#windows.get(key);
    if (!w || now >= w.resetAt) {
      w = { count: 0, resetAt: now + rule.windowSeconds * 1000 };
      this.#windows.set(key, w);
    }
    const resetAfter = Math.max(0, (w.resetAt - now) / 1000);
    const headers = (remaining: number): Record<string, string> => ({
      'X-RateLimit-Limit': String(rule.limit),
      'X-RateLimit-Remaining': String(Math.max(0, remaining)),
      'X-RateLimit-Reset': (w.resetAt / 1000).toFixed(3),
      'X-RateLimit-Reset-After': resetAfter.toFixed(3),
      'X-RateLimit-Bucket': bucketHash,
    });

    const forced = this.#forced.get(route);
    if (forced && forced.skip > 0) forced.skip -= 1;
    else if (forced && forced.remaining > 0) {
      forced.remaining -= 1;
      if (forced.remaining === 0) this.#forced.delete(route);
      return this.#limited(headers(rule.limit - w.count), forced.retryAfterSeconds, forced.global, 'forced');
    }

    if (!exemptFromGlobal) {
      if (now >= this.#global.resetAt) this.#global = { count: 0, resetAt: now + 1000 };
      if (this.#global.count >= GLOBAL_PER_SECOND) {
        return this.#limited({}, (this.#global.resetAt - now) / 1000, true, 'global');
      }
      this.#global.count += 1;
    }

    if (w.count >= rule.limit) return this.#limited(headers(0), resetAfter, false, 'bucket');
    w.count += 1;
    return { headers: headers(rule.limit - w.count) };
  }

  #limited(
    base: Record<string, string>,
    retryAfterSeconds: number,
    global: boolean,
    cause: RateDecision['cause'],
  ): RateDecision {
    const retry_after = Math.max(0.001, Number(retryAfterSeconds.toFixed(3)));
    const headers: Record<string, string> = {
      ...base,
      // The header is whole seconds (rounded up); the body carries the precise float.
      'Retry-After': String(Math.ceil(retry_after)),
      'X-RateLimit-Scope': global ? 'global' : 'user',
    };
    if (global) headers['X-RateLimit-Global'] = 'true';
    return {
      headers,
      tooManyRequests: { message: 'You are being rate limited.', retry_after, global },
      cause,
    };
  }

  record(call: CallRecord): void {
    this.calls.push(call);
  }

  /** Calls to `route` (every status, 429s included). */
  callCount(route: RouteKey): number {
    return this.calls.filter((c) => c.route === route).length;
  }

  /** 429s answered on `route`; pass a cause to tell forced ones from real overruns. */
  tooManyRequestsCount(route?: RouteKey, cause?: RateDecision['cause']): number {
    return this.calls.filter((c) => c.status === 429 && (!route || c.route === route) && (!cause || c.cause === cause))
      .length;
  }

  /** Calls and 429s per wall-clock minute (`YYYY-MM-DDTHH:MM`), for one route or all. */
  perMinute(route?: RouteKey): Array<{ minute: string; calls: number; tooManyRequests: number }> {
    const byMinute = new Map<string, { calls: number; tooManyRequests: number }>();
    for (const c of this.calls) {
      if (route && c.route !== route) continue;
      const minute = new Date(c.at).toISOString().slice(0, 16);
      const slot = byMinute.get(minute) ?? { calls: 0, tooManyRequests: 0 };
      slot.calls += 1;
      if (c.status === 429) slot.tooManyRequests += 1;
      byMinute.set(minute, slot);
    }
    return [...byMinute].map(([minute, v]) => ({ minute, ...v }));
  }
}
