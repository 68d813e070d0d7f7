import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { Pool } from '../../db/pool.ts';
import type { PlatformAdapter } from '../platform.ts';
import { createWebClient, SlackOutbound } from './outbound.ts';
import { startSlackInbound } from './inbound.ts';

/** Slack: Web API outbound in every process, the Bolt app where the process listens. */
export function createSlackAdapter(config: Config, pool: Pool, _log: Logger): PlatformAdapter {
  if (!config.SLACK_BOT_TOKEN) throw new Error('SLACK_BOT_TOKEN is required for Slack');
  const outbound = new SlackOutbound(
    createWebClient(config.SLACK_BOT_TOKEN, config.SLACK_API_URL),
    pool,
    config.SLACK_UPDATES_PER_MINUTE,
  );
  return { outbound, startInbound: (context) => startSlackInbound(context, { outbound }) };
}
