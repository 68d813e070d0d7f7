import type { RateBuckets } from '../../reply/rate-bucket.ts';
import type { PlatformAdapter } from '../platform.ts';
import type { DiscordInboundSettings } from './settings.ts';
import { createRest, DiscordOutbound } from './outbound.ts';
import { startDiscordInbound } from './inbound.ts';
import { DiscordCardRenderer } from './cards.ts';
import { DISCORD_RULES } from './rules.ts';

/** Discord: REST outbound in every process, the gateway client where the process listens. */
export function createDiscordAdapter(settings: DiscordInboundSettings, buckets: RateBuckets): PlatformAdapter {
  const rest = createRest(settings.token, settings.apiUrl);
  const outbound = new DiscordOutbound(rest, buckets, settings.applicationId, settings.apiUrl);
  return {
    rules: DISCORD_RULES,
    outbound,
    cards: new DiscordCardRenderer(outbound),
    startInbound: (context) => startDiscordInbound(context, { rest, outbound, settings }),
  };
}
