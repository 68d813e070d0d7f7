import { ChannelType, MessageFlags, type ChatInputCommandInteraction, type Interaction } from 'discord.js';
import type { ReplyTarget } from '../../core/reply-target.ts';
import { LIMITS } from './limits.ts';
import { requesterOf } from './people.ts';

// SuppressEmbeds on everything the bot says: a link in its text is never fetched for a preview.
// A deferred reply cannot carry it (Discord accepts only Ephemeral there); the edit that fills it does.
export const PRIVATE = {
  flags: MessageFlags.Ephemeral | MessageFlags.SuppressEmbeds,
  allowedMentions: { parse: [] },
} as const;
export const PUBLIC_EDIT = { flags: MessageFlags.SuppressEmbeds, allowedMentions: { parse: [] } } as const;

/** Text cut to one Discord message. */
export const clip = (text: string) =>
  text.length <= LIMITS.messageContent ? text : `${text.slice(0, LIMITS.messageContent - 1)}…`;

/** The person who clicked, submitted or ran a command, with their roles where they did it. */
export function personOf(interaction: Interaction) {
  return requesterOf(interaction.user, { guildId: interaction.guildId, roles: interaction.member?.roles });
}

/**
 * The channel a command was run in, and the channel its thread belongs to when it is a thread
 * (and whether that thread is private: grants made or listed there stay there).
 */
export function placeOf(interaction: ChatInputCommandInteraction): ReplyTarget {
  const thread = interaction.channel?.isThread() ? interaction.channel : undefined;
  return {
    platform: 'discord',
    channel: interaction.channelId,
    ...(interaction.guildId ? { workspace: interaction.guildId } : {}),
    ...(thread?.parentId ? { parent: thread.parentId } : {}),
    ...(thread?.type === ChannelType.PrivateThread ? { privateThread: true } : {}),
  };
}
