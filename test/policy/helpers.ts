import path from 'node:path';
import { platformDirectory } from '../../src/adapters/registry.ts';
import { builtinTools, kindsByName } from '../../src/agent/tools/catalog.ts';
import { createSkillTools } from '../../src/skills/index.ts';
import { loadPolicyFile, type Person, type Policy, type ToolDescriptor, type Where } from '../../src/policy/index.ts';

/** The built-in platforms, as the app passes them to the policy. */
export const platforms = platformDirectory();

export const OPS_TEAM = path.resolve(import.meta.dirname, '../fixtures/policy/ops-team.yaml');

export function opsPolicy(): Policy {
  const loaded = loadPolicyFile(OPS_TEAM, { platforms });
  if (!loaded.ok) throw new Error(loaded.problems.map((p) => p.message).join('\n'));
  return loaded.policy;
}

const slack = (user: string, extra: Partial<Person> = {}): Person => ({
  platform: 'slack',
  workspace: 'T0OPS0001',
  user,
  ...extra,
});

/** The people of the ops-team example. */
export const people = {
  ana: slack('U0SRE0001'),
  bo: slack('U0SRE0002'),
  dev: slack('U0DEV0001'),
  dev2: slack('U0DEV0002'),
  oncall: slack('U0ONC0001', { groups: ['S0ONCALL1'] }),
  guest: slack('U0GST0001', { guest: true }),
  /** A Slack Connect user from another org whose id looks like Ana's, in the same user group id. */
  anaLookalike: slack('U0SRE0001', { workspace: 'T0OTHER01', groups: ['S0ONCALL1'] }),
  discordSre: { platform: 'discord', workspace: '444444444444444444', user: '555', groups: ['222222222222222222'] },
  discordOncall: { platform: 'discord', workspace: '999999999999999999', user: '333333333333333333' },
  discordStranger: { platform: 'discord', workspace: '999999999999999999', user: '777' },
  console: { platform: 'console', workspace: 'local', user: 'operator' },
} satisfies Record<string, Person>;

export const places = {
  ops: { platform: 'slack', workspace: 'T0OPS0001', channel: 'C0OPS0001', dm: false },
  general: { platform: 'slack', workspace: 'T0OPS0001', channel: 'C0GEN0001', dm: false },
  dm: { platform: 'slack', workspace: 'T0OPS0001', channel: 'D0ANA0001', dm: true },
  discordGuild: { platform: 'discord', workspace: '444444444444444444', channel: '888', dm: false },
  discordOther: { platform: 'discord', workspace: '999999999999999999', channel: '889', dm: false },
  console: { platform: 'console', channel: 'session', dm: true },
} satisfies Record<string, Where>;

/** Tool descriptors as the app would build them. */
export const tools = {
  read_file: { name: 'read_file', kind: 'read' },
  current_time: { name: 'current_time', kind: 'read' },
  write_file: { name: 'write_file', kind: 'write' },
  edit_file: { name: 'edit_file', kind: 'write' },
  delete_file: { name: 'delete_file', kind: 'delete' },
  run_command: { name: 'run_command', kind: 'exec' },
  question: { name: 'request_human_approval', kind: 'question' },
  mcpRead: {
    name: 'github__list_issues',
    kind: 'mcp',
    mcp: { server: 'github', trusted: true, readOnlyHint: true },
  },
  mcpReadRemote: {
    name: 'remote__search',
    kind: 'mcp',
    mcp: { server: 'remote', trusted: false, readOnlyHint: true },
  },
  mcpDestructive: {
    name: 'github__delete_repo',
    kind: 'mcp',
    mcp: { server: 'github', trusted: true, destructiveHint: true },
  },
  mcpUnannotated: { name: 'github__create_issue', kind: 'mcp', mcp: { server: 'github', trusted: true } },
  mcpAdditive: {
    name: 'github__add_comment',
    kind: 'mcp',
    mcp: { server: 'github', trusted: true, destructiveHint: false },
  },
  mcpConfigNever: {
    name: 'github__merge',
    kind: 'mcp',
    mcp: { server: 'github', trusted: true, override: 'never' },
  },
  mcpFileWrite: {
    name: 'fs__write_file',
    kind: 'mcp',
    mcp: { server: 'fs', trusted: true, destructiveHint: false },
  },
  deployApply: { name: 'deploy__apply', kind: 'mcp', mcp: { server: 'deploy', trusted: true } },
  mystery: { name: 'launch_rocket', kind: 'exec' },
} satisfies Record<string, ToolDescriptor>;

/**
 * The policy kinds of Countersign's own tools, as the tools say them: what `countersign policy
 * check` gets from src/cli.ts (src/policy has no table of its own).
 */
export const builtinToolKinds = kindsByName([
  ...builtinTools('.'),
  ...createSkillTools({ list: () => [], get: () => undefined }),
]);
