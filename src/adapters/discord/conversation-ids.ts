import { DISCORD_RULES } from './rules.ts';

/**
 * Discord conversation ids, written only here. Threads are channels of their own, so a channel (or
 * thread) id names its conversation: `discord:<channel>`, and `discord:dm:<channel>` for a DM.
 */
export function discordConversationId(channelId: string, isDm: boolean): string {
  return isDm ? `${DISCORD_RULES.name}:dm:${channelId}` : `${DISCORD_RULES.name}:${channelId}`;
}
