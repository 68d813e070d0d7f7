import type { PlatformRules } from '../../core/platform-rules.ts';

/**
 * Discord's people and places. User, guild, channel and role ids are global snowflakes, so an id
 * names one account in every guild and DM. A person in a DM is vouched for by `@me` (there is no
 * guild); a reply target without a guild is a DM.
 */
export const DISCORD_RULES: PlatformRules = {
  name: 'discord',
  displayName: 'Discord',
  ids: {
    user: /^\d{1,20}$/,
    workspace: /^\d{1,20}$/,
    directWorkspace: '@me',
    channel: /^\d{1,20}$/,
    group: /^\d{1,20}$/,
    groupPrefix: 'discord-role',
    examples: {
      user: '123456789012345678',
      workspace: '123456789012345678',
      channel: '123456789012345678',
      group: '123456789012345678',
    },
    upperCase: false,
  },
  workspaceScopedIds: false,
  foreignIdsAreGuests: false,
  unknownWorkspace: '@me',
  operatorTerminal: false,
  isDirect: (reply) => reply.workspace === undefined,
  capabilities: { feedback: true, steersByDefault: true, nativeStream: false, modals: true, ephemeral: true },
};
