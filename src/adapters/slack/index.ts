import type { Logger } from 'pino';
import type { RateBuckets } from '../../reply/rate-bucket.ts';
import type { PlatformAdapter } from '../platform.ts';
import { createWebClient, SlackOutbound } from './outbound.ts';
import { startSlackInbound } from './inbound.ts';
import { SlackCardRenderer } from './cards.ts';
import { SlackNativeStreaming } from './streaming.ts';
import { SlackAgentSessions } from './agent-sessions.ts';
import type { TurnEvents } from '../../queue/turn-events.ts';
import { SLACK_RULES } from './rules.ts';
import type { SlackInboundSettings, SlackOutboundSettings } from './settings.ts';

export type { SlackOutboundSettings } from './settings.ts';

/**
 * Slack: Web API outbound in every process, the Bolt app where the process listens (given
 * `inbound`, its listening half's settings; a process that only works turns has none).
 */
export function createSlackAdapter(
  settings: SlackOutboundSettings,
  buckets: RateBuckets,
  log: Logger,
  inbound?: SlackInboundSettings,
): PlatformAdapter {
  const client = createWebClient(settings.botToken, settings.apiUrl);
  const streaming =
    settings.streaming === 'auto'
      ? new SlackNativeStreaming(client, buckets, log, {
          maxAgeMs: settings.streamRolloverSeconds * 1000,
          startsPerMinute: settings.streamStartsPerMinute,
        })
      : undefined;
  const outbound = new SlackOutbound(client, buckets, settings.updatesPerMinute, streaming);
  const sessions =
    settings.agentSessions === 'auto'
      ? new SlackAgentSessions(client, log, { fallbackMs: (settings.agentSessionsFallbackMinutes ?? 30) * 60_000 })
      : undefined;
  return {
    rules: SLACK_RULES,
    outbound,
    cards: new SlackCardRenderer(outbound),
    startInbound: (context) => {
      if (!inbound) throw new Error('the Slack adapter was made without its inbound settings');
      return startSlackInbound(context, { settings: inbound, outbound, ...(sessions ? { sessions } : {}) });
    },
    ...(sessions ? { observeTurns: (events: TurnEvents) => sessions.observe(events) } : {}),
  };
}
