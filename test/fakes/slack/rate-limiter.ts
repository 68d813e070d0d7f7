/**
 * Slack's Web API rate limits as the fake enforces them: each method has a per-minute budget per
 * app per workspace (the documented tiers: Tier 1 ≈ 1/min, Tier 2 ≈ 20/min, Tier 3 ≈ 50/min,
 * Tier 4 ≈ 100/min). Past it Slack answers HTTP 429 with `Retry-After` in seconds and
 * `{ok:false, error:'ratelimited'}`. Budgets here are opt-in (`perMinute`), so a test states the
 * limits it exercises; `DOCUMENTED_PER_MINUTE` holds the tiers of the methods Countersign calls.
 */

/** Per-minute budgets from the methods' documented tiers (chat.postMessage is "special": ~1/s per channel). */
/** @public Reference data for tests that state their limits: read, not imported. */
export const DOCUMENTED_PER_MINUTE: Readonly<Record<string, number>> = {
  'auth.test': 100,
  'chat.update': 50,
  'chat.delete': 50,
  'chat.postEphemeral': 100,
  'chat.startStream': 20,
  'chat.appendStream': 100,
  'chat.stopStream': 20,
  'conversations.replies': 50,
  'conversations.history': 50,
  'conversations.info': 100,
  'conversations.members': 100,
  'users.info': 100,
  'reactions.add': 50,
  'apps.connections.open': 20,
  'files.getUploadURLExternal': 100,
  'files.completeUploadExternal': 100,
};

export interface CallRecord {
  method: string;
  /** The workspace the token belongs to; undefined when the token was not recognised. */
  team: string | undefined;
  at: number;
  status: number;
  /** `error` of an `{ok:false}` answer. */
  error?: string;
  /**
   * Why a 429 was sent: forced by the test, or the method's budget really ran out. A failure forced
   * with `FakeSlack.failNext(method, { error, status? })` is "forced" too.
   */
  cause?: 'forced' | 'budget';
  /** The call's arguments, as the app sent them (form or JSON). */
  args?: Record<string, unknown>;
}

export interface RateStats {
  calls: number;
  /** Calls answered 429. */
  rateLimited: number;
  /** The most calls this method accepted in any 60-second span (a sliding window). */
  maxAcceptedPerMinute: number;
}

interface Forced {
  remaining: number;
  retryAfterSeconds: number;
}

const MINUTE_MS = 60_000;

export class SlackRateLimiter {
  readonly #perMinute = new Map<string, number>();
  readonly #forced = new Map<string, Forced>();
  /** Every Web API call the fake answered, in order. */
  readonly calls: CallRecord[] = [];

  constructor(perMinute: Readonly<Record<string, number>> = {}) {
    for (const [method, limit] of Object.entries(perMinute)) this.setLimit(method, limit);
  }

  /** Sets (or, with undefined, lifts) a method's per-minute budget in every workspace. */
  setLimit(method: string, perMinute: number | undefined): void {
    if (perMinute === undefined) this.#perMinute.delete(method);
    else this.#perMinute.set(method, perMinute);
  }

  /** The next `count` calls to `method` (any workspace) answer 429 with `Retry-After: retryAfterSeconds`. */
  failNext(method: string, count: number, retryAfterSeconds: number): void {
    this.#forced.set(method, { remaining: count, retryAfterSeconds });
  }

  /** Decides whether a call may proceed; on a 429 returns the Retry-After (whole seconds, ≥ 1). */
  check(
    method: string,
    team: string | undefined,
    now: number,
  ): { retryAfterSeconds: number; cause: 'forced' | 'budget' } | undefined {
    const forced = this.#forced.get(method);
    if (forced && forced.remaining > 0) {
      forced.remaining -= 1;
      return { retryAfterSeconds: forced.retryAfterSeconds, cause: 'forced' };
    }
    const limit = this.#perMinute.get(method);
    if (limit === undefined) return undefined;
    const accepted = this.#accepted(method, team).filter((at) => at > now - MINUTE_MS);
    if (accepted.length < limit) return undefined;
    // The budget frees up when the oldest call in the window leaves it.
    const oldest = accepted[accepted.length - limit] ?? now;
    return { retryAfterSeconds: Math.max(1, Math.ceil((oldest + MINUTE_MS - now) / 1000)), cause: 'budget' };
  }

  record(call: CallRecord): void {
    this.calls.push(call);
  }

  stats(method: string, team?: string): RateStats {
    const mine = this.calls.filter((c) => c.method === method && (team === undefined || c.team === team));
    const accepted = mine.filter((c) => c.status !== 429).map((c) => c.at);
    let max = 0;
    let start = 0;
    for (let end = 0; end < accepted.length; end += 1) {
      while ((accepted[end] ?? 0) - (accepted[start] ?? 0) >= MINUTE_MS) start += 1;
      max = Math.max(max, end - start + 1);
    }
    return { calls: mine.length, rateLimited: mine.filter((c) => c.status === 429).length, maxAcceptedPerMinute: max };
  }

  #accepted(method: string, team: string | undefined): number[] {
    return this.calls.filter((c) => c.method === method && c.team === team && c.status !== 429).map((c) => c.at);
  }
}
