import { ChannelType, PermissionFlagsBits, type Client, type Guild, type GuildMember } from 'discord.js';
import type { Grant } from '../../approval/grants.ts';

/** Who is looking at a grants list, and from which channel (their DM with the bot, or a guild channel). */
export interface GrantViewer {
  userId: string;
  channelId: string;
}

/**
 * The grants a person may see listed: those of places they can view. A grant names its tool and
 * arguments, so listing one from a channel or private thread the person is not in would tell them
 * what happens there. A guild place is visible when the person is a member whose permissions there
 * include View Channel (and, for a private thread, who is in the thread or may manage threads); a DM
 * grant only from that DM. Anything Discord will not confirm counts as not visible.
 */
export async function grantsVisibleTo(client: Client, viewer: GrantViewer, grants: Grant[]): Promise<Grant[]> {
  const members = new Map<string, Promise<GuildMember | undefined>>();
  const memberOf = (guild: Guild) => {
    if (!members.has(guild.id))
      members.set(
        guild.id,
        guild.members.fetch(viewer.userId).catch(() => undefined),
      );
    return members.get(guild.id)!;
  };
  const visible = await Promise.all(grants.map((g) => canView(client, viewer, g.place, memberOf)));
  return grants.filter((_, i) => visible[i]);
}

async function canView(
  client: Client,
  viewer: GrantViewer,
  place: Grant['place'],
  memberOf: (guild: Guild) => Promise<GuildMember | undefined>,
): Promise<boolean> {
  if (place.platform !== 'discord') return false;
  if (place.dm) return place.channel === viewer.channelId;
  const guild = client.guilds.cache.get(place.workspace);
  if (!guild) return false;
  const member = await memberOf(guild);
  if (!member) return false;
  const channel = await guild.channels.fetch(place.channel).catch(() => null);
  if (!channel) return false;
  const permissions = channel.permissionsFor(member);
  // A thread whose parent is not cached has no permissions to read (null): not confirmed, not visible.
  if (!permissions?.has(PermissionFlagsBits.ViewChannel)) return false;
  if (channel.type !== ChannelType.PrivateThread || permissions.has(PermissionFlagsBits.ManageThreads)) return true;
  // A private thread shows only to its members (and to those who may manage threads).
  return channel.members.fetch({ member: viewer.userId }).then(
    () => true,
    () => false,
  );
}
