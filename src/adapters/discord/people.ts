import type { User } from 'discord.js';

/** What a person sees when their message could not be queued: nothing is lost silently. */
export const UNAVAILABLE =
  'Countersign is temporarily unavailable (its database is unreachable), so this was not queued. Please try again in a moment.';

/** A Discord user as the requester / clicker the rest of Countersign knows. */
export function requesterOf(user: User): { platform: 'discord'; userId: string; displayName: string } {
  return { platform: 'discord', userId: user.id, displayName: user.displayName };
}
