import type { User } from 'discord.js';

/** A Discord user as the requester / clicker the rest of Countersign knows. */
export function requesterOf(user: User): { platform: 'discord'; userId: string; displayName: string } {
  return { platform: 'discord', userId: user.id, displayName: user.displayName };
}
