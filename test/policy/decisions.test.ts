import { describe, expect, it } from 'vitest';
import {
  builtinPolicy,
  formatPattern,
  type Outcome,
  type Person,
  type Policy,
  type Risk,
  type ToolDescriptor,
  type Where,
} from '../../src/policy/index.ts';
import { opsPolicy, people, places, platforms, tools } from './helpers.ts';

const alone = builtinPolicy({ platforms });
const withApprovers = builtinPolicy({ platforms, approvers: ['slack:U0SRE0001', 'discord:333333333333333333'] });
const ops = opsPolicy();

interface Case {
  says: string;
  policy: Policy;
  tool: ToolDescriptor;
  args?: Record<string, unknown>;
  by?: Person;
  where?: Where;
  outcome: Outcome;
  rule: string;
  risk?: Risk;
}

const write = (path: string) => ({ path, content: 'x' });
const argv = (...command: string[]) => ({ command });

const cases: Case[] = [
  // The built-in policy, alone (no APPROVERS): risky calls ask.
  {
    says: 'reading a file runs at once',
    policy: alone,
    tool: tools.read_file,
    args: { path: 'a.md' },
    outcome: 'allow',
    rule: 'default:read',
    risk: 'low',
  },
  { says: 'the clock runs at once', policy: alone, tool: tools.current_time, outcome: 'allow', rule: 'default:read' },
  {
    says: 'a workspace write asks',
    policy: alone,
    tool: tools.write_file,
    args: write('notes/a.md'),
    outcome: 'ask',
    rule: 'default:write',
    risk: 'medium',
  },
  {
    says: 'a delete asks when nobody could countersign',
    policy: alone,
    tool: tools.delete_file,
    args: { path: 'a.md' },
    outcome: 'ask',
    rule: 'default:delete',
    risk: 'high',
  },
  {
    says: 'run_command asks when nobody could countersign',
    policy: alone,
    tool: tools.run_command,
    args: argv('ls'),
    outcome: 'ask',
    rule: 'default:exec',
    risk: 'high',
  },
  {
    says: 'a script write alone still asks, and is high risk',
    policy: alone,
    tool: tools.write_file,
    args: write('tools/x.sh'),
    outcome: 'ask',
    rule: 'default:agent-changing-write',
    risk: 'high',
  },
  {
    says: "the agent's own question always makes a card",
    policy: alone,
    tool: tools.question,
    outcome: 'ask',
    rule: 'default:question',
  },
  // The built-in policy with APPROVERS: risky calls need a countersignature.
  {
    says: 'a delete needs a countersignature',
    policy: withApprovers,
    tool: tools.delete_file,
    args: { path: 'a.md' },
    outcome: 'countersign',
    rule: 'default:delete',
  },
  {
    says: 'run_command needs a countersignature',
    policy: withApprovers,
    tool: tools.run_command,
    args: argv('ls'),
    outcome: 'countersign',
    rule: 'default:exec',
    risk: 'high',
  },
  {
    says: 'a read-only tool of a trusted MCP server runs at once',
    policy: withApprovers,
    tool: tools.mcpRead,
    outcome: 'allow',
    rule: 'default:mcp-read',
    risk: 'low',
  },
  {
    says: "a remote server's read-only claim is not trusted",
    policy: withApprovers,
    tool: tools.mcpReadRemote,
    outcome: 'countersign',
    rule: 'default:mcp-read-untrusted',
    risk: 'high',
  },
  {
    says: 'a destructive MCP tool needs a countersignature',
    policy: withApprovers,
    tool: tools.mcpDestructive,
    outcome: 'countersign',
    rule: 'default:mcp-destructive',
  },
  {
    says: 'an unannotated MCP tool may be destructive',
    policy: withApprovers,
    tool: tools.mcpUnannotated,
    outcome: 'countersign',
    rule: 'default:mcp-unannotated',
    risk: 'high',
  },
  {
    says: 'an MCP tool declared not destructive asks',
    policy: withApprovers,
    tool: tools.mcpAdditive,
    outcome: 'ask',
    rule: 'default:mcp-write',
    risk: 'medium',
  },
  {
    says: 'the MCP config\'s "never" runs at once',
    policy: withApprovers,
    tool: tools.mcpConfigNever,
    outcome: 'allow',
    rule: 'default:mcp-config-never',
  },
  {
    says: 'an unknown kind of tool is high risk',
    policy: withApprovers,
    tool: tools.mystery,
    outcome: 'countersign',
    rule: 'default:exec',
  },
  // Laundering: writes that can later run or change the agent.
  {
    says: 'writing tools/x.sh needs a countersignature',
    policy: withApprovers,
    tool: tools.write_file,
    args: write('tools/x.sh'),
    outcome: 'countersign',
    rule: 'default:agent-changing-write',
    risk: 'high',
  },
  {
    says: 'writing .gitconfig needs a countersignature',
    policy: withApprovers,
    tool: tools.write_file,
    args: write('.gitconfig'),
    outcome: 'countersign',
    rule: 'default:agent-changing-write',
  },
  {
    says: 'writing a custom skill needs a countersignature',
    policy: withApprovers,
    tool: tools.write_file,
    args: write('skills/x/SKILL.md'),
    outcome: 'countersign',
    rule: 'default:agent-changing-write',
  },
  {
    says: 'a change of case does not dodge the skills guard',
    policy: withApprovers,
    tool: tools.edit_file,
    args: { path: 'Skills/x/SKILL.md' },
    outcome: 'countersign',
    rule: 'default:agent-changing-write',
  },
  {
    says: 'a nested .env is a dotfile',
    policy: withApprovers,
    tool: tools.write_file,
    args: write('app/config/.env'),
    outcome: 'countersign',
    rule: 'default:agent-changing-write',
  },
  {
    says: 'a git hook is a dot-folder write',
    policy: withApprovers,
    tool: tools.write_file,
    args: write('.git/hooks/pre-commit'),
    outcome: 'countersign',
    rule: 'default:agent-changing-write',
  },
  {
    says: 'a path that walks through ".." is judged where it lands',
    policy: withApprovers,
    tool: tools.write_file,
    args: write('docs/../tools/x.md'),
    outcome: 'countersign',
    rule: 'default:agent-changing-write',
  },
  {
    says: 'package.json can run scripts',
    policy: withApprovers,
    tool: tools.write_file,
    args: write('web/package.json'),
    outcome: 'countersign',
    rule: 'default:agent-changing-write',
  },
  {
    says: 'deleting a script is guarded too',
    policy: withApprovers,
    tool: tools.delete_file,
    args: { path: 'bin/deploy' },
    outcome: 'countersign',
    rule: 'default:agent-changing-write',
    risk: 'high',
  },
  {
    says: 'an MCP file write into skills/ is guarded',
    policy: withApprovers,
    tool: tools.mcpFileWrite,
    args: { path: 'skills/evil/SKILL.md' },
    outcome: 'countersign',
    rule: 'default:agent-changing-write',
  },
  {
    says: 'a plain markdown write only asks',
    policy: withApprovers,
    tool: tools.write_file,
    args: write('notes/today.md'),
    outcome: 'ask',
    rule: 'default:write',
  },
  // The ops-team example.
  {
    says: 'an SRE runs kubectl get freely',
    policy: ops,
    by: people.ana,
    tool: tools.run_command,
    args: argv('kubectl', 'get', 'pods'),
    outcome: 'allow',
    rule: 'kubectl-read',
  },
  {
    says: 'kubectl get as a string is the same prefix',
    policy: ops,
    by: people.ana,
    tool: tools.run_command,
    args: { command: 'kubectl get pods -A' },
    outcome: 'allow',
    rule: 'kubectl-read',
  },
  {
    says: 'a non-SRE kubectl get needs on-call',
    policy: ops,
    by: people.dev,
    tool: tools.run_command,
    args: argv('kubectl', 'get', 'pods'),
    outcome: 'countersign',
    rule: 'kubectl',
  },
  {
    says: 'an SRE kubectl delete needs on-call',
    policy: ops,
    by: people.ana,
    tool: tools.run_command,
    args: argv('kubectl', 'delete', 'pod', 'x'),
    outcome: 'countersign',
    rule: 'kubectl',
  },
  {
    says: 'a workspace ./kubectl is not kubectl for the allow rule',
    policy: ops,
    by: people.ana,
    tool: tools.run_command,
    args: argv('./kubectl', 'get', 'pods'),
    outcome: 'countersign',
    rule: 'kubectl',
  },
  {
    says: 'kubectl by full path is still kubectl for the countersign rule',
    policy: ops,
    by: people.ana,
    tool: tools.run_command,
    args: argv('/usr/local/bin/kubectl', 'delete', 'ns', 'prod'),
    outcome: 'countersign',
    rule: 'kubectl',
  },
  {
    says: "a Slack Connect lookalike of an SRE's id is no SRE",
    policy: ops,
    by: people.anaLookalike,
    tool: tools.run_command,
    args: argv('kubectl', 'get', 'pods'),
    outcome: 'countersign',
    rule: 'kubectl',
  },
  {
    says: 'a Discord SRE by role runs kubectl get freely',
    policy: ops,
    by: people.discordSre,
    where: places.discordGuild,
    tool: tools.run_command,
    args: argv('kubectl', 'get', 'pods'),
    outcome: 'allow',
    rule: 'kubectl-read',
  },
  {
    says: 'other commands fall to the built-in countersign',
    policy: ops,
    by: people.ana,
    tool: tools.run_command,
    args: argv('ls'),
    outcome: 'countersign',
    rule: 'default:exec',
  },
  {
    says: 'a deploy in #ops needs on-call',
    policy: ops,
    by: people.ana,
    where: places.ops,
    tool: tools.deployApply,
    outcome: 'countersign',
    rule: 'deploy-in-ops',
  },
  {
    says: 'a deploy elsewhere is denied',
    policy: ops,
    by: people.ana,
    where: places.general,
    tool: tools.deployApply,
    outcome: 'deny',
    rule: 'deploy-elsewhere',
  },
  {
    says: 'a deploy in a DM is denied',
    policy: ops,
    by: people.ana,
    where: places.dm,
    tool: tools.deployApply,
    outcome: 'deny',
    rule: 'deploy-elsewhere',
  },
  {
    says: 'a runbook write asks',
    policy: ops,
    by: people.dev,
    tool: tools.write_file,
    args: write('runbooks/db.md'),
    outcome: 'ask',
    rule: 'runbooks',
    risk: 'medium',
  },
  {
    says: 'a script among the runbooks still needs a countersignature',
    policy: ops,
    by: people.dev,
    tool: tools.write_file,
    args: write('runbooks/restart.sh'),
    outcome: 'countersign',
    rule: 'default:agent-changing-write',
    risk: 'high',
  },
  {
    says: 'a write outside runbooks falls to the built-in ask',
    policy: ops,
    by: people.dev,
    tool: tools.write_file,
    args: write('notes/a.md'),
    outcome: 'ask',
    rule: 'default:write',
  },
  {
    says: 'reads still run at once under a file',
    policy: ops,
    by: people.dev,
    tool: tools.mcpRead,
    outcome: 'allow',
    rule: 'default:mcp-read',
  },
];

describe('decide', () => {
  it.each(cases)(
    '$says',
    ({ policy, tool, args = {}, by = people.dev, where = places.general, outcome, rule, risk }) => {
      const decision = policy.decide({ tool, args, where, requester: by });
      expect({ outcome: decision.outcome, rule: decision.rule.name }).toEqual({ outcome, rule });
      if (risk) expect(decision.risk).toBe(risk);
    },
  );

  it('has a table of at least 30 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  it('names the file and line of the rule that decided', () => {
    const decision = ops.decide({
      tool: tools.run_command,
      args: argv('kubectl', 'get'),
      where: places.ops,
      requester: people.ana,
    });
    expect(decision.rule.source).toMatch(/ops-team\.yaml:\d+$/);
    const builtin = alone.decide({ tool: tools.read_file, args: {}, where: places.dm, requester: people.ana });
    expect(builtin.rule.source).toBe('built-in');
  });

  it("carries the deny rule's message", () => {
    const decision = ops.decide({ tool: tools.deployApply, args: {}, where: places.general, requester: people.ana });
    expect(decision.message).toBe('Deploys run only in #ops, where on-call can see them.');
    expect(decision.approvers).toEqual([]);
  });

  it('names the approvers of a rule, groups expanded', () => {
    const decision = ops.decide({
      tool: tools.run_command,
      args: argv('kubectl', 'delete'),
      where: places.ops,
      requester: people.ana,
    });
    expect(decision.approvers.map(formatPattern)).toEqual(['slack-usergroup:S0ONCALL1', 'discord:333333333333333333']);
  });

  it('makes countersign rules not grantable unless they say so', () => {
    const decision = ops.decide({
      tool: tools.run_command,
      args: argv('kubectl', 'delete'),
      where: places.ops,
      requester: people.ana,
    });
    expect(decision.grantable).toBe(false);
  });
});

describe('mayUse', () => {
  const admitted = (policy: Policy, who: Person, where: Where) => policy.mayUse(who, where).ok;

  it('lets everyone use the bot without a policy file', () => {
    expect(admitted(alone, people.guest, places.general)).toBe(true);
  });

  it('lets members of the workspace use the bot', () => {
    expect(admitted(ops, people.dev, places.general)).toBe(true);
  });

  it("refuses guests politely, with the policy's text", () => {
    expect(ops.mayUse(people.guest, places.general)).toEqual({
      ok: false,
      refusal: 'Sorry, I only work for the ops team here. Ask in #ops if you need something.',
    });
  });

  it('refuses a Slack Connect user from another org, even with a lookalike id', () => {
    expect(admitted(ops, people.anaLookalike, places.ops)).toBe(false);
  });

  it('lets members of the listed Discord guild in, and nobody from other guilds', () => {
    expect(admitted(ops, people.discordSre, places.discordGuild)).toBe(true);
    expect(admitted(ops, people.discordStranger, places.discordOther)).toBe(false);
  });

  it("always lets the operator's console in", () => {
    expect(admitted(ops, people.console, places.console)).toBe(true);
  });
});

describe('mayDecide', () => {
  const kubectlDelete = ops.decide({
    tool: tools.run_command,
    args: argv('kubectl', 'delete', 'pod'),
    where: places.ops,
    requester: people.ana,
  });
  const runbook = ops.decide({
    tool: tools.write_file,
    args: write('runbooks/a.md'),
    where: places.ops,
    requester: people.dev,
  });

  it("refuses the requester's own countersignature", () => {
    const verdict = ops.mayDecide(kubectlDelete, people.ana, people.ana);
    expect(verdict).toMatchObject({ ok: false, reason: expect.stringContaining('someone other than you') });
  });

  it('lets the requester withdraw their own countersign call', () => {
    expect(ops.mayDecide(kubectlDelete, people.ana, people.ana, 'deny').ok).toBe(true);
  });

  it('lets a member of the on-call user group countersign', () => {
    expect(ops.mayDecide(kubectlDelete, people.oncall, people.ana).ok).toBe(true);
  });

  it('lets a Discord on-call countersign from any guild (Discord ids are global)', () => {
    expect(ops.mayDecide(kubectlDelete, people.discordOncall, people.ana).ok).toBe(true);
  });

  it('refuses someone outside the approvers', () => {
    expect(ops.mayDecide(kubectlDelete, people.bo, people.ana).ok).toBe(false);
  });

  it("refuses another org's user whose user group id looks like on-call's", () => {
    expect(ops.mayDecide(kubectlDelete, people.anaLookalike, people.ana).ok).toBe(false);
  });

  it('lets the requester approve an ask', () => {
    expect(ops.mayDecide(runbook, people.dev, people.dev).ok).toBe(true);
  });

  it('lets a default approver approve an ask', () => {
    expect(ops.mayDecide(runbook, people.bo, people.dev).ok).toBe(true);
  });

  it('refuses a bystander on an ask', () => {
    expect(ops.mayDecide(runbook, people.dev2, people.dev).ok).toBe(false);
  });

  it('refuses a self-approved script write once approvers are configured (no laundering)', () => {
    const decision = withApprovers.decide({
      tool: tools.write_file,
      args: write('tools/x.sh'),
      where: places.dm,
      requester: people.dev,
    });
    expect(withApprovers.mayDecide(decision, people.dev, people.dev).ok).toBe(false);
    expect(withApprovers.mayDecide(decision, people.ana, people.dev).ok).toBe(true);
  });

  it('lets nobody approve a denied call', () => {
    const denied = ops.decide({ tool: tools.deployApply, args: {}, where: places.general, requester: people.ana });
    expect(ops.mayDecide(denied, people.oncall, people.ana)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('deploy-elsewhere'),
    });
  });
});
