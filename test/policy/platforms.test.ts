import { describe, expect, it } from 'vitest';
import { platformDirectory } from '../../src/adapters/registry.ts';
import { ToolRegistry } from '../../src/agent/tools/registry.ts';
import { CallPolicy } from '../../src/approval/envelope.ts';
import { PolicyGate } from '../../src/approval/gate.ts';
import { PlatformDirectory, type PlatformRules } from '../../src/core/platform-rules.ts';
import {
  formatPattern,
  formatPolicyProblem,
  mayDecide,
  parsePerson,
  parsePolicy,
  policyCommand,
  samePerson,
  type Decision,
  type Person,
  type Policy,
  type PolicyPlatforms,
  type Where,
} from '../../src/policy/index.ts';

// The app hands the policy its platform directory: core's type must have the policy's shape.
const asPolicyPlatforms: PolicyPlatforms = platformDirectory();

/** A platform no built-in knows, with ids of its own: upper-case, scoped to the tenant that issued them. */
const TEAMS: PlatformRules = {
  name: 'teams',
  displayName: 'Teams',
  ids: {
    user: /^[0-9A-F]{8}$/,
    workspace: /^TENANT[0-9]{2}$/,
    channel: /^(CH|DM)[0-9]{4}$/,
    group: /^G[0-9A-F]{4}$/,
    groupPrefix: 'teams-team',
    examples: { user: 'ABCDEF01', workspace: 'TENANT01', channel: 'CH0001', group: 'G00FF' },
    upperCase: true,
  },
  workspaceScopedIds: true,
  foreignIdsAreGuests: true,
  unknownWorkspace: 'unknown',
  operatorTerminal: false,
  isDirect: (reply) => reply.channel.startsWith('DM'),
  capabilities: { feedback: false, steersByDefault: true, nativeStream: false, modals: false, ephemeral: false },
};
/** The same platform, had its ids been global. */
const TEAMS_GLOBAL: PlatformRules = { ...TEAMS, workspaceScopedIds: false, foreignIdsAreGuests: false };

const withTeams = platformDirectory([TEAMS]);
const withGlobalTeams = platformDirectory([TEAMS_GLOBAL]);

function policy(text: string, platforms: PolicyPlatforms = withTeams): Policy {
  const parsed = parsePolicy(text, 'policy.yaml', { platforms });
  if (!parsed.ok) throw new Error(parsed.problems.map(formatPolicyProblem).join('\n'));
  return parsed.policy;
}

function problems(text: string, platforms: PolicyPlatforms = withTeams): string[] {
  const parsed = parsePolicy(text, 'policy.yaml', { platforms });
  return parsed.ok ? [] : parsed.problems.map((p) => p.message);
}

const TEAMS_POLICY = `version: 1
workspaces: [teams:TENANT01]
approvers: [teams:ABCDEF01, teams-team:G00FF]
requesters:
  allow:
    - platforms: [teams]
  deny:
    - guest: true
rules:
  - tool: run_command
    where: { channels: [teams:CH0001], workspaces: [teams:TENANT01] }
    outcome: countersign
`;

const teamsPerson = (workspace: string, user = 'ABCDEF01', extra: Partial<Person> = {}): Person => ({
  platform: 'teams',
  workspace,
  user,
  ...extra,
});
const inTenant = (workspace: string): Where => ({ platform: 'teams', workspace, channel: 'CH0001', dm: false });

describe('a policy for platforms the directory describes', () => {
  it('is given the app’s directory, whose type is the policy’s', () => {
    expect(asPolicyPlatforms.all().map((r) => r.name)).toEqual(['slack', 'discord', 'console']);
  });

  it('accepts the people, groups, workspaces and channels of an added platform', () => {
    expect(problems(TEAMS_POLICY)).toEqual([]);
    // Without its rules the same file names an unknown platform.
    expect(problems(TEAMS_POLICY, platformDirectory())).toContainEqual(expect.stringMatching(/unknown platform/));
  });

  it('refuses its malformed ids, with its own shapes and examples', () => {
    expect(problems('approvers: [teams:abcdef01]\n')).toEqual([
      'approvers[0]: "teams:abcdef01": "abcdef01" is not a teams user id (Teams ids are upper-case), e.g. ABCDEF01',
    ]);
    expect(problems('approvers: [teams-team:XYZ]\n')).toEqual([
      'approvers[0]: "teams-team:XYZ": "XYZ" is not a teams group id, e.g. G00FF',
    ]);
    expect(problems('approvers: [teams:TENANT9:ABCDEF01]\n')).toEqual([
      'approvers[0]: "teams:TENANT9:ABCDEF01": "TENANT9" is not a teams workspace id, e.g. TENANT01',
    ]);
    expect(problems('workspaces: [teams:tenant01]\n')).toEqual([
      'workspaces[0]: "teams:tenant01" is not a teams workspace id (Teams ids are upper-case) (e.g. teams:TENANT01)',
    ]);
    expect(problems('rules:\n  - tool: a\n    where: { channels: [teams:C1] }\n    outcome: allow\n')).toEqual([
      'rules[0].where.channels[0]: "teams:C1" is not a teams channel id (e.g. teams:CH0001)',
    ]);
  });

  it('names every known platform and group prefix when one is unknown', () => {
    const parsed = parsePerson('irc:alice', withTeams);
    expect(parsed).toEqual({
      ok: false,
      message:
        '"irc:alice" names an unknown platform "irc" (expected one of slack, discord, console, teams, discord-role, slack-usergroup, teams-team)',
    });
    expect(problems('requesters:\n  allow:\n    - platforms: [irc]\n')).toEqual([
      'requesters.allow[0].platforms[0]: expected one of slack, discord, console, teams',
    ]);
  });

  it('writes a group back with the prefix it was written with', () => {
    const parsed = parsePerson('teams-team:G00FF', withTeams);
    expect(parsed).toEqual({
      ok: true,
      pattern: { kind: 'group', platform: 'teams', prefix: 'teams-team', group: 'G00FF' },
    });
    if (parsed.ok) expect(formatPattern(parsed.pattern)).toBe('teams-team:G00FF');
  });
});

describe('short ids of a workspace-scoped platform', () => {
  it('match only people of the home workspaces', () => {
    const scoped = policy(TEAMS_POLICY);
    expect(scoped.isApprover(teamsPerson('TENANT01'), inTenant('TENANT01'))).toBe(true);
    // The same-looking id another tenant issued is someone else, even in a conversation of the home tenant.
    expect(scoped.isApprover(teamsPerson('TENANT02'), inTenant('TENANT01'))).toBe(false);
    expect(scoped.isApprover(teamsPerson('TENANT02', 'FFFF0000', { groups: ['G00FF'] }), inTenant('TENANT01'))).toBe(
      false,
    );
    expect(scoped.isApprover(teamsPerson('TENANT01', 'FFFF0000', { groups: ['G00FF'] }), inTenant('TENANT01'))).toBe(
      true,
    );
  });

  it('match in any workspace where the platform’s ids are global', () => {
    const global = policy(TEAMS_POLICY, withGlobalTeams);
    expect(global.isApprover(teamsPerson('TENANT02'), inTenant('TENANT01'))).toBe(true);
  });

  it('without home workspaces, match only the conversation’s', () => {
    const noHome = policy('approvers: [teams:ABCDEF01]\n');
    expect(noHome.isApprover(teamsPerson('TENANT02'), inTenant('TENANT02'))).toBe(true);
    expect(noHome.isApprover(teamsPerson('TENANT02'), inTenant('TENANT01'))).toBe(false);
  });

  it('make one id of two workspaces two people, for the requester’s own decision', () => {
    const a = teamsPerson('TENANT01');
    const b = teamsPerson('TENANT02');
    expect(samePerson(withTeams, a, b)).toBe(false);
    expect(samePerson(withGlobalTeams, a, b)).toBe(true);
    const ask: Decision = {
      outcome: 'ask',
      rule: { name: 'r', source: 'policy.yaml:1' },
      approvers: [],
      risk: 'medium',
      home: ['TENANT01'],
      grantable: false,
    };
    expect(mayDecide(withTeams, ask, b, a).ok).toBe(false);
    expect(mayDecide(withGlobalTeams, ask, b, a).ok).toBe(true);
  });

  it('count people of another workspace as guests where the platform says so', () => {
    const foreign = teamsPerson('TENANT02');
    expect(policy(TEAMS_POLICY).mayUse(foreign, inTenant('TENANT01')).ok).toBe(false);
    expect(policy(TEAMS_POLICY, withGlobalTeams).mayUse(foreign, inTenant('TENANT01')).ok).toBe(true);
  });
});

describe("the operator's own terminal", () => {
  it('is never turned away where the platform says it is one', () => {
    const ids = { ...TEAMS_GLOBAL.ids, groupPrefix: 'tty-group' };
    const terminal = { ...TEAMS_GLOBAL, name: 'tty', ids, operatorTerminal: true };
    const chat = { ...TEAMS_GLOBAL, name: 'tty', ids };
    const operator: Person = { platform: 'tty', workspace: 'TENANT01', user: 'ABCDEF01' };
    const here: Where = { platform: 'tty', channel: 'DM0001', dm: true };
    const text = 'requesters:\n  allow:\n    - platforms: [teams]\n';
    expect(policy(text, platformDirectory([TEAMS, terminal])).mayUse(operator, here).ok).toBe(true);
    expect(policy(text, platformDirectory([TEAMS, chat])).mayUse(operator, here).ok).toBe(false);
  });
});

describe('group patterns stored before they kept their prefix', () => {
  // An envelope row of then: `approvers` as JSON, a group without `prefix`.
  const oldRow = {
    outcome: 'countersign',
    rule: { name: 'deploy', source: 'policy.yaml:9' },
    approvers: [{ kind: 'group', platform: 'slack', group: 'S0ONCALL1' }],
    home: ['T0OPS0001'],
  };

  it('still read, and format as the platform’s group', () => {
    const stored = CallPolicy.parse(oldRow);
    expect(stored.approvers.map(formatPattern)).toEqual(['slack-group:S0ONCALL1']);
  });

  it('keep the prefix once stored with it', () => {
    const row = { ...oldRow, approvers: [{ ...oldRow.approvers[0], prefix: 'slack-usergroup' }] };
    expect(CallPolicy.parse(row).approvers.map(formatPattern)).toEqual(['slack-usergroup:S0ONCALL1']);
  });

  it('still decide who may countersign', () => {
    const stored = CallPolicy.parse(oldRow);
    const gate = new PolicyGate({ current: () => policy('version: 1\n') }, new ToolRegistry(), platformDirectory());
    const requester = { platform: 'slack', workspace: 'T0OPS0001', userId: 'U0DEV0001' };
    const oncall = { platform: 'slack', workspace: 'T0OPS0001', userId: 'U0ONC0001', groups: ['S0ONCALL1'] };
    expect(gate.mayDecideStored(stored, oncall, requester, 'approve').ok).toBe(true);
    expect(gate.mayDecideStored(stored, { ...oncall, groups: [] }, requester, 'approve').ok).toBe(false);
  });
});

describe('the policy gate on an added platform', () => {
  const gate = new PolicyGate({ current: () => policy(TEAMS_POLICY) }, new ToolRegistry(), withTeams);

  it('knows a DM by the platform’s rules', () => {
    expect(gate.whereOf({ platform: 'teams', workspace: 'TENANT01', channel: 'DM0001' }).dm).toBe(true);
    expect(gate.whereOf({ platform: 'teams', workspace: 'TENANT01', channel: 'CH0001' }).dm).toBe(false);
    // A platform nobody described has no DMs: nothing depends on one.
    expect(gate.whereOf({ platform: 'irc', channel: 'x' }).dm).toBe(false);
  });

  it('steers where the platform steers by default, and queues elsewhere', () => {
    expect(gate.conversationMode({ platform: 'teams', workspace: 'TENANT01', channel: 'CH0001' })).toBe('steer');
    expect(gate.conversationMode({ platform: 'irc', channel: 'x' })).toBe('queue');
  });

  it('compares a person stored without a workspace as of the platform’s unknown workspace', () => {
    const stored = CallPolicy.parse({
      outcome: 'countersign',
      rule: { name: 'r', source: 'policy.yaml:1' },
      approvers: [{ kind: 'user', platform: 'teams', user: 'ABCDEF01' }],
      home: ['TENANT01'],
    });
    const requester = { platform: 'teams', workspace: 'TENANT01', userId: '00000001' };
    // A short id matches in a home workspace only: "unknown" is none.
    expect(gate.mayDecideStored(stored, { platform: 'teams', userId: 'ABCDEF01' }, requester, 'approve').ok).toBe(
      false,
    );
    expect(
      gate.mayDecideStored(
        stored,
        { platform: 'teams', workspace: 'TENANT01', userId: 'ABCDEF01' },
        requester,
        'approve',
      ).ok,
    ).toBe(true);
  });
});

describe('countersign policy help', () => {
  it('shows the ids of the platforms it was given', () => {
    const { lines } = policyCommand(['help'], { options: { platforms: new PlatformDirectory([TEAMS]) } });
    const text = lines.join('\n');
    expect(text).toContain('PERSON is platform:workspace:user (e.g. teams:TENANT01:ABCDEF01)');
    expect(text).toContain('a channel id (CH0001)');
    expect(text).toContain('teams-team:ID');
    expect(text).not.toMatch(/slack|discord/i);
  });
});
