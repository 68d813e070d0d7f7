export {
  FakeDiscord,
  type FakeDiscordOptions,
  type HeldRequest,
  type RestRequest,
  type RequestMatch,
} from './fake-discord.ts';
export { GatewayOp, GatewayIntent, GatewayClose, type DispatchRecord, type ReceivedFrame } from './gateway.ts';
export { DEFAULT_BUCKETS, type BucketRule, type RouteKey } from './rate-limiter.ts';
export {
  MessageFlag,
  pingsOf,
  type StoredMessage,
  type InteractionState,
  type MessageVersion,
  type Pings,
} from './world.ts';
