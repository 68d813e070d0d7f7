import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { Pool } from '../../db/pool.ts';
import type { PlatformAdapter } from '../platform.ts';
import { createWebClient, SlackOutbound } from './outbound.ts';
import { startSlackInbound } from './inbound.ts';
import { SlackNativeStreaming } from './streaming.ts';

/** Slack: Web API outbound in every process, the Bolt app where the process listens. */
export function createSlackAdapter(config: Config, pool: Pool, log: Logger): PlatformAdapter {
  if (!config.SLACK_BOT_TOKEN) throw new Error('SLACK_BOT_TOKEN is required for Slack');
  const client = createWebClient(config.SLACK_BOT_TOKEN, config.SLACK_API_URL);
  const streaming =
    config.SLACK_STREAMING === 'auto'
      ? new SlackNativeStreaming(client, pool, log, {
          maxAgeMs: config.SLACK_STREAM_ROLLOVER_SECONDS * 1000,
          startsPerMinute: config.SLACK_STREAM_STARTS_PER_MINUTE,
        })
      : undefined;
  const outbound = new SlackOutbound(client, pool, config.SLACK_UPDATES_PER_MINUTE, streaming);
  return { outbound, startInbound: (context) => startSlackInbound(context, { outbound }) };
}
