import { parseArgs } from 'node:util';
import { builtinPolicy, type PolicyOptions } from './defaults.ts';
import type { Policy, ToolDescriptor, Where } from './engine.ts';
import { formatPolicyProblem, loadPolicyFile } from './parse.ts';
import { formatPattern, personFromId } from './person.ts';
import type { PolicyPlatforms } from './platforms.ts';
import { TOOL_KINDS, type ToolKind } from './schema.ts';

/** What a policy command prints (stdout lines) and its exit code. */
export interface CommandResult {
  lines: string[];
  exitCode: number;
}

/**
 * The kinds of Countersign's own tools by name, as the tools define them (the policy knows no tools:
 * src/cli.ts reads them off the tool definitions). MCP tools (`server__tool`) are `mcp`.
 */
export type ToolKinds = ReadonlyMap<string, ToolKind>;

/** The usage, with ids of the platforms the policy knows as examples. */
function policyUsage(platforms: PolicyPlatforms): string[] {
  const people = platforms
    .all()
    .slice(0, 2)
    .map((r) => `${r.name}:${r.ids.examples.workspace}:${r.ids.examples.user}`);
  const person = `platform:workspace:user${people.length ? ` (e.g. ${people.join(' or ')})` : ''}`;
  const [channel] = platforms.all().map((r) => r.ids.examples.channel);
  const groups = platforms
    .all()
    .filter((r) => r.ids.groupPrefix !== undefined)
    .map((r) => r.ids.groupPrefix);
  return [
    'Usage: countersign policy <command>',
    '  check --as PERSON --tool NAME [--args JSON] [--where WHERE] [--groups ID,…] [--policy FILE] [--kind KIND] [--mcp trusted|untrusted] [--hints read-only|destructive|additive]',
    `      the outcome for one call and the rule that decided it. PERSON is ${person};`,
    `      WHERE is dm (default), a channel id${channel ? ` (${channel})` : ''}, or platform:workspace:channel;`,
    `      --groups: the ids of the groups PERSON is in there${groups.length ? ` (as in ${groups.map((g) => `${g}:ID`).join(', ')})` : ''};`,
    '      --policy: the policy file to ask (default: POLICY_FILE; neither: the built-in policy)',
    '  lint [FILE]   every problem in a policy file (default: POLICY_FILE), as file:line:column; exits 1 on any',
  ];
}

/** `countersign policy lint [FILE]`. */
function policyLint(file: string, options: PolicyOptions): CommandResult {
  const result = loadPolicyFile(file, options);
  if (result.ok) return { lines: [`${file}: ok`], exitCode: 0 };
  const lines = result.problems.map(formatPolicyProblem);
  lines.push(`${result.problems.length} problem${result.problems.length === 1 ? '' : 's'}`);
  return { lines, exitCode: 1 };
}

/** `direct`: the workspace a person in a DM is vouched for by where it is no id (`@me`); a DM then has none. */
function parseWhere(text: string, platform: string, workspace: string, direct: string | undefined): Where | string {
  if (text === 'dm') return { platform, ...(workspace !== direct ? { workspace } : {}), dm: true };
  const parts = text.split(':');
  if (parts.length === 1) return { platform, workspace, channel: text, dm: false };
  if (parts.length === 3 && parts[0] === platform)
    return { platform, workspace: parts[1]!, channel: parts[2]!, dm: false };
  return `--where must be dm, a channel id, or ${platform}:WORKSPACE:CHANNEL (got "${text}")`;
}

interface PolicyCheckInput {
  as: string;
  tool: string;
  args?: string;
  where?: string;
  kind?: string;
  mcp?: string;
  hints?: string;
  groups?: string;
}

/** `countersign policy check …` against `policy`; `kinds` names what the built-in tools are. */
function policyCheck(
  policy: Policy,
  input: PolicyCheckInput,
  platforms: PolicyPlatforms,
  kinds: ToolKinds = new Map(),
): CommandResult {
  const fail = (line: string): CommandResult => ({ lines: [line, ...policyUsage(platforms)], exitCode: 2 });
  const person = personFromId(input.as, platforms);
  if ('error' in person) return fail(`--as: ${person.error}`);
  const groups = (input.groups ?? '')
    .split(',')
    .map((g) => g.trim())
    .filter(Boolean);
  const requester = groups.length ? { ...person, groups } : person;
  const direct = platforms.rulesOf(requester.platform).ids.directWorkspace;
  const where = parseWhere(input.where ?? 'dm', requester.platform, requester.workspace, direct);
  if (typeof where === 'string') return fail(where);
  let args: unknown;
  try {
    args = input.args === undefined ? {} : JSON.parse(input.args);
  } catch (error) {
    return fail(`--args is not JSON: ${(error as Error).message}`);
  }
  const kind = input.kind ?? kinds.get(input.tool) ?? (input.tool.includes('__') ? 'mcp' : undefined);
  if (!kind || !(TOOL_KINDS as readonly string[]).includes(kind))
    return fail(`--kind: say what ${input.tool} is: one of ${TOOL_KINDS.join(', ')}`);
  const tool: ToolDescriptor = { name: input.tool, kind: kind as ToolKind };
  if (kind === 'mcp') {
    const hints = input.hints ?? 'none';
    tool.mcp = {
      server: input.tool.split('__')[0]!,
      trusted: (input.mcp ?? 'trusted') === 'trusted',
      ...(hints === 'read-only' ? { readOnlyHint: true } : {}),
      ...(hints === 'destructive' ? { destructiveHint: true } : {}),
      ...(hints === 'additive' ? { destructiveHint: false } : {}),
    };
  }
  const admitted = policy.mayUse(requester, where);
  if (!admitted.ok) return { lines: ['may use: no', `refusal: ${admitted.refusal}`], exitCode: 0 };
  const decision = policy.decide({ tool, args, where, requester });
  const lines = [
    `outcome: ${decision.outcome}`,
    `rule: ${decision.rule.name} (${decision.rule.source})`,
    `risk: ${decision.risk}`,
  ];
  if (decision.outcome === 'ask' || decision.outcome === 'countersign') {
    const who = decision.approvers.map(formatPattern).join(', ') || 'nobody configured';
    lines.push(`approvers: ${decision.outcome === 'ask' ? `the requester, ${who}` : `${who} (not the requester)`}`);
  }
  if (decision.message) lines.push(`message: ${decision.message}`);
  return { lines, exitCode: 0 };
}

/**
 * `countersign policy …`: `args` are the words after `policy`. `file` is POLICY_FILE, which
 * `check --policy FILE` and `lint FILE` override (neither: `check` asks the built-in policy).
 * `options.platforms` are the platforms a policy may name.
 */
export function policyCommand(
  args: string[],
  env: { file?: string; options: PolicyOptions; toolKinds?: ToolKinds },
): CommandResult {
  const [command, ...rest] = args;
  const { options } = env;
  const POLICY_USAGE = policyUsage(options.platforms);
  try {
    if (command === 'lint') {
      const file = rest[0] ?? env.file;
      if (!file) return { lines: ['policy lint needs a FILE (or POLICY_FILE)', ...POLICY_USAGE], exitCode: 2 };
      return policyLint(file, options);
    }
    if (command === 'check') {
      const { values } = parseArgs({
        args: rest,
        options: {
          as: { type: 'string' },
          tool: { type: 'string' },
          args: { type: 'string' },
          where: { type: 'string' },
          kind: { type: 'string' },
          mcp: { type: 'string' },
          hints: { type: 'string' },
          groups: { type: 'string' },
          policy: { type: 'string' },
        },
      });
      if (!values.as || !values.tool)
        return { lines: ['policy check needs --as and --tool', ...POLICY_USAGE], exitCode: 2 };
      const file = values.policy ?? env.file;
      let policy = builtinPolicy(options);
      if (file) {
        const loaded = loadPolicyFile(file, options);
        if (!loaded.ok) return { lines: loaded.problems.map(formatPolicyProblem), exitCode: 1 };
        policy = loaded.policy;
      }
      return policyCheck(policy, { ...values, as: values.as, tool: values.tool }, options.platforms, env.toolKinds);
    }
  } catch (error) {
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS'))
      return { lines: [(error as Error).message, ...POLICY_USAGE], exitCode: 2 };
    throw error;
  }
  if (command === 'help' || command === '--help') return { lines: POLICY_USAGE, exitCode: 0 };
  // No command is a wrong invocation, as for `skills` and `grants`: usage on stderr, exit 2.
  const complaint = command === undefined ? [] : [`Unknown policy command "${command}".`];
  return { lines: [...complaint, ...POLICY_USAGE], exitCode: 2 };
}
