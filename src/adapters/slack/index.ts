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

/** What Slack's outbound half needs of the configuration (the inbound half gets its own section). */
export interface SlackOutboundSettings {
  botToken: string;
  apiUrl?: string;
  /** Posts and edits per minute per workspace, shared by every worker (SLACK_UPDATES_PER_MINUTE). */
  updatesPerMinute: number;
  /** `auto`: native streaming where Slack allows it; `off`: edits only (SLACK_STREAMING). */
  streaming: 'auto' | 'off';
  streamRolloverSeconds: number;
  streamStartsPerMinute: number;
  /** SLACK_AGENT_SESSIONS; absent: `off` (an embedding app that built its own settings). */
  agentSessions?: 'auto' | 'off';
  agentSessionsFallbackMinutes?: number;
}

/** Slack: Web API outbound in every process, the Bolt app where the process listens. */
export function createSlackAdapter(
  settings: SlackOutboundSettings,
  buckets: RateBuckets,
  log: Logger,
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
    startInbound: (context) => startSlackInbound(context, { outbound, ...(sessions ? { sessions } : {}) }),
    ...(sessions ? { observeTurns: (events: TurnEvents) => sessions.observe(events) } : {}),
  };
}
