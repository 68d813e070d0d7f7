import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { whyUnreachable } from '../../net/unreachable.ts';
import type { InboundHandle } from '../platform.ts';
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
    for (let attempt = 1, delay: number = LIMITS.reconnectFirstDelayMs; ; attempt++) {
      await sleep(delay, undefined, { signal: stopping.signal });
      delay = Math.min(delay * 2, LIMITS.reconnectMaxDelayMs);
      const probe = await probeSlack(apiUrl, stopping.signal);
      if (!probe.ok) {
        log.debug({ host, why: probe.why, attempt }, 'Slack still unreachable');
        continue;
      }
      try {
        connected = await options.connect();
        release();
        log.info({ host, attempts: attempt }, 'Slack reachable again; connected');
        return;
      } catch (error) {
        if (stopping.signal.aborted) return;
        log.error({ err: error, host }, 'Slack is reachable but connecting failed; retrying');
      }
    }
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
