import { splitMessage } from '../../../reply/split.ts';
import { LIMITS } from '../limits.ts';
import { neutralizeMentions } from './mentions.ts';

/**
 * Cuts text into messages Discord accepts (≤ 2000 characters each). Code blocks are never left
 * open: a block that spans a cut is closed and reopened with its language in the next message.
 */
export function splitForDiscord(text: string): string[] {
  return splitMessage(text, LIMITS.messageContent);
}

/**
 * Model output as the messages to post: mentions made inert first (the zero-width spaces count
 * toward the limit), then split. Discord's markdown is CommonMark-like, so nothing else changes.
 */
export function toDiscordMessages(modelText: string): string[] {
  return splitForDiscord(neutralizeMentions(modelText));
}
