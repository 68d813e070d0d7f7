import type { PlatformRules } from '../../core/platform-rules.ts';

/**
 * Slack's people and places. User ids (`U…`, `W…` on Enterprise Grid) are unique only within the
 * team or org that issued them: in a Slack Connect channel another org's user can carry a
 * same-looking id, so ids are workspace-scoped and another org's people count as guests. Direct
 * messages are `D…` channels.
 */
export const SLACK_RULES: PlatformRules = {
  name: 'slack',
  displayName: 'Slack',
  ids: {
    user: /^[UW][A-Z0-9]{2,}$/,
    workspace: /^[TE][A-Z0-9]{2,}$/,
    channel: /^[CGD][A-Z0-9]{2,}$/,
    group: /^S[A-Z0-9]{2,}$/,
    groupPrefix: 'slack-usergroup',
    examples: { user: 'U0123ABCD', workspace: 'T0123ABCD', channel: 'C0123ABCD', group: 'S0123ABCD' },
    upperCase: true,
  },
  workspaceScopedIds: true,
  foreignIdsAreGuests: true,
  unknownWorkspace: 'unknown',
  operatorTerminal: false,
  isDirect: (reply) => reply.channel.startsWith('D'),
  capabilities: { feedback: true, steersByDefault: true, nativeStream: true, modals: true, ephemeral: true },
};
