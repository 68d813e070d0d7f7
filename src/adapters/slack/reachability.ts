import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { whyUnreachable } from '../../net/unreachable.ts';
import type { InboundHandle } from '../platform.ts';
import { backoffDelayMs, retryWithBackoff } from '../../retry/backoff.ts';
import { LIMITS } from './limits.ts';

/** Slack's Web API root when SLACK_API_URL does not set another. */
export const DEFAULT_SLACK_API_URL = 'https://slack.com/api/';

type Reachability = { ok: true } | { ok: false; why: string };

/**
 * Whether Slack's Web API answers at all: `api.test` needs no token, and any HTTP answer (even an
 * error status) means the host is there. Without this, the Web API client retries an unreachable host
 * for half an hour inside start-up, logging a warning that names no host on every try.
 */
async function probeSlack(apiUrl: string, signal?: AbortSignal): Promise<Reachability> {
  const timeout = AbortSignal.timeout(LIMITS.probeTimeoutMs);
  try {
    const res = await fetch(new URL('api.test', apiUrl), {
      method: 'POST',
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    await res.body?.cancel();
    return { ok: true };
  } catch (error) {
    if (timeout.aborted) return { ok: false, why: `no answer within ${LIMITS.probeTimeoutMs / 1000} s` };
    const why = whyUnreachable(error) ?? ((error as Error).message || String(error)).replace(/\s+/g, ' ');
    return { ok: false, why };
  }
}

/** A probe that found no Slack: retried quietly, unlike a reachable Slack that refused to connect. */
class SlackUnreachableError extends Error {
  constructor(why: string) {
    super(why);
    this.name = 'SlackUnreachableError';
  }
}

/**
 * Connects when Slack can be reached: at once, or — when it cannot be reached now — in the
 * background, probing with backoff. The warning naming the host is logged once, the retries at
 * debug; readiness is held until connected. Errors of a reachable Slack (a revoked token) still fail
 * start-up, as before.
 */
export async function connectWhenReachable(options: {
  apiUrl: string;
  log: Logger;
  holdReadiness: (what: string) => () => void;
  connect: () => Promise<InboundHandle>;
}): Promise<InboundHandle> {
  const { apiUrl, log } = options;
  const first = await probeSlack(apiUrl);
  if (first.ok) return options.connect();
  const host = new URL(apiUrl).host;
  log.warn(
    { host, why: first.why },
    `cannot reach Slack at ${host}: ${first.why}; retrying with backoff — /healthz says not ready until Slack is connected`,
  );
  const release = options.holdReadiness('slack');
  const stopping = new AbortController();
  let connected: InboundHandle | undefined;
  const background = (async () => {
    // The probe above was the first try, so the first wait comes before the next one.
    await sleep(LIMITS.reconnectFirstDelayMs, undefined, { signal: stopping.signal });
    await retryWithBackoff(
      async (attempt) => {
        const probe = await probeSlack(apiUrl, stopping.signal);
        if (!probe.ok) throw new SlackUnreachableError(probe.why);
        connected = await options.connect();
        release();
        log.info({ host, attempts: attempt }, 'Slack reachable again; connected');
      },
      {
        firstDelayMs: backoffDelayMs(2, LIMITS.reconnectFirstDelayMs, LIMITS.reconnectMaxDelayMs),
        maxDelayMs: LIMITS.reconnectMaxDelayMs,
        signal: stopping.signal,
        onFailure: (error, { attempt, delayMs }) => {
          if (error instanceof SlackUnreachableError)
            log.debug({ host, why: error.message, attempt }, 'Slack still unreachable');
          else log.error({ err: error, host }, 'Slack is reachable but connecting failed; retrying');
          return delayMs;
        },
      },
    );
  })().catch((error: unknown) => {
    if (!stopping.signal.aborted) log.error({ err: error }, 'Slack reconnection stopped');
  });
  return {
    async stop() {
      stopping.abort();
      await background;
      await connected?.stop();
      release();
    },
  };
}
