import type { User } from 'discord.js';
import type { Requester } from '../../core/person.ts';

/** A guild member's role ids, whether discord.js cached the member or only has the raw API shape. */
type Roles = { cache: { keys(): Iterable<string> } } | readonly string[] | null | undefined;

function roleIds(roles: Roles): string[] {
  if (!roles) return [];
  return Array.isArray(roles) ? [...roles] : [...(roles as { cache: { keys(): Iterable<string> } }).cache.keys()];
}

/**
 * A Discord user as the requester / clicker the rest of Countersign knows: the guild they spoke in
 * (`@me` in a DM) and their roles there, which the policy's `discord-role:` entries match; in a DM
 * their roles are unknown (`groupsUnknown`), and a budget that covers a role looks them up.
 */
export function requesterOf(
  user: User,
  where: { guildId?: string | null; roles?: Roles } = {},
): Requester & { platform: 'discord'; displayName: string } {
  // discord.js lists @everyone (whose id is the guild's) among a cached member's roles; it is no group.
  const groups = roleIds(where.roles).filter((id) => id !== where.guildId);
  // A DM carries no roles (nor does a guild event without its member): which the person has is unknown.
  const groupsUnknown = !where.guildId || !where.roles;
  return {
    platform: 'discord',
    userId: user.id,
    displayName: user.displayName,
    workspace: where.guildId ?? '@me',
    ...(groups.length ? { groups } : {}),
    ...(groupsUnknown ? { groupsUnknown } : {}),
  };
}
