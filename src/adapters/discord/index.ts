import type { RateBuckets } from '../../reply/rate-bucket.ts';
import type { DiscordInboundSettings, PlatformAdapter } from '../platform.ts';
import { createRest, DiscordOutbound } from './outbound.ts';
import { startDiscordInbound } from './inbound.ts';
import { DiscordCardRenderer } from './cards.ts';
import { DISCORD_RULES } from './rules.ts';

/** What the REST half needs; the gateway half reads the rest of its settings from the adapter context. */
export type DiscordOutboundSettings = Pick<DiscordInboundSettings, 'token' | 'applicationId' | 'apiUrl'>;

/** Discord: REST outbound in every process, the gateway client where the process listens. */
export function createDiscordAdapter(settings: DiscordOutboundSettings, buckets: RateBuckets): PlatformAdapter {
  const rest = createRest(settings.token, settings.apiUrl);
  const outbound = new DiscordOutbound(rest, buckets, settings.applicationId);
  return {
    rules: DISCORD_RULES,
    outbound,
    cards: new DiscordCardRenderer(outbound),
    startInbound: (context) => startDiscordInbound(context, { rest, outbound }),
  };
}
