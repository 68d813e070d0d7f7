import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { Pool } from '../../db/pool.ts';
import type { PlatformAdapter } from '../platform.ts';
import { createRest, DiscordOutbound } from './outbound.ts';
import { startDiscordInbound } from './inbound.ts';

/** Discord: REST outbound in every process, the gateway client where the process listens. */
export function createDiscordAdapter(config: Config, pool: Pool, _log: Logger): PlatformAdapter {
  const token = config.DISCORD_TOKEN;
  const applicationId = config.DISCORD_APPLICATION_ID;
  if (!token || !applicationId) throw new Error('DISCORD_TOKEN and DISCORD_APPLICATION_ID are required for Discord');
  const rest = createRest(token, config.DISCORD_API_URL);
  const outbound = new DiscordOutbound(rest, pool, applicationId);
  return {
    outbound,
    startInbound: (context) => startDiscordInbound(context, { rest, outbound }),
  };
}
