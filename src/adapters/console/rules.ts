import type { PlatformRules } from '../../core/platform-rules.ts';

/**
 * The terminal: one local person per session, always a direct conversation. Answers are read in
 * order, so a message while a turn runs waits its turn instead of steering it.
 */
export const CONSOLE_RULES: PlatformRules = {
  name: 'console',
  displayName: 'a terminal',
  ids: {
    user: /^\S{1,64}$/,
    workspace: /^\S{1,64}$/,
    channel: /^\S+$/,
    examples: { user: 'alice', workspace: 'local', channel: 'session' },
    upperCase: false,
  },
  workspaceScopedIds: false,
  foreignIdsAreGuests: false,
  unknownWorkspace: 'local',
  operatorTerminal: true,
  isDirect: () => true,
  capabilities: { feedback: false, steersByDefault: false, nativeStream: false, modals: false, ephemeral: false },
};
