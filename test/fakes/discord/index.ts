export { FakeDiscord } from './fake-discord.ts';
export { GatewayOp, GatewayIntent } from './gateway.ts';
export { DEFAULT_BUCKETS } from './rate-limiter.ts';
