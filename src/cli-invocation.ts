import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';

/**
 * Every `countersign` command: its usage lines (what `countersign help` and `countersign COMMAND
 * --help` print) and the options it takes. One table, so a command cannot take an option its help
 * does not name, and an option nobody takes (`schedules list --jsonx`) is refused before anything runs.
 */
interface CommandSpec {
  usage: string;
  options: ParseArgsOptionsConfig;
  positionals: boolean;
}

const str = { type: 'string' } as const;
const flag = { type: 'boolean' } as const;

export const COMMANDS: Record<string, CommandSpec> = {
  start: {
    usage: '  start [--role=all|ingress|worker]   run the bot (default role: all, in one process)',
    options: { role: str },
    positionals: false,
  },
  migrate: {
    usage: '  migrate                             apply database migrations and exit',
    options: {},
    positionals: false,
  },
  config: {
    usage: '  config                              print the effective configuration (secrets masked)',
    options: {},
    positionals: false,
  },
  skills: {
    usage:
      '  skills list|lint [--strict] [DIR]|new NAME [--dir DIR]\n                                      list, check or scaffold skills',
    options: { strict: flag, dir: str },
    positionals: true,
  },
  usage: {
    usage:
      '  usage [--days=N] [--prices=FILE]    model tokens and estimated cost by day and conversation (default: 7 days)\n' +
      '  usage --budgets                     each budget of POLICY_FILE: limit, spent, reserved, left, reset time',
    options: { days: str, prices: str, budgets: flag },
    positionals: false,
  },
  policy: {
    usage:
      '  policy check --as PERSON --tool NAME [--args JSON] [--where WHERE] [--groups IDS] [--policy FILE]\n' +
      '               [--kind KIND] [--mcp trusted|untrusted] [--hints read-only|destructive|additive]\n' +
      "                                      the policy's outcome for one call, and the rule (a dry run;\n" +
      '                                      default policy: POLICY_FILE, else the built-in one)\n' +
      '  policy lint [FILE]                  every problem of a policy file (default: POLICY_FILE)',
    options: { as: str, tool: str, args: str, where: str, kind: str, mcp: str, hints: str, groups: str, policy: str },
    positionals: true,
  },
  audit: {
    usage:
      '  audit [--since=7d|ISO] [--until=ISO] [--person=ID] [--tool=NAME] [--outcome=EVENT] [--limit=N]\n' +
      '                                      the audit log as JSON lines, oldest first',
    options: { since: str, until: str, person: str, tool: str, outcome: str, limit: str },
    positionals: false,
  },
  status: {
    usage: '  status [--person=PLATFORM:USER]     running, parked and queued work: type, priority, state, age',
    options: { person: str },
    positionals: false,
  },
  connections: {
    usage:
      '  connections list [--json]           who connected which per-person MCP server (never a token)\n' +
      '  connections revoke PLATFORM:USER SERVER\n' +
      "                                      forget one person's connection to a server",
    options: { json: flag },
    positionals: true,
  },
  grants: {
    usage:
      '  grants list [--json]                the standing grants ("Always allow here") that still apply\n' +
      '  grants revoke ID                    revoke one (its id, or the 8 characters lists show)',
    options: { json: flag },
    positionals: true,
  },
  schedules: {
    usage:
      '  schedules list [--json]             every schedule: WHEN, next run or why it is paused, last outcome\n' +
      '  schedules history ID                its last 20 runs: slot, outcome, work item, where it answered\n' +
      '  schedules pause|resume|delete ID    change one (its id, or the 8 characters the list shows)',
    options: { json: flag },
    positionals: true,
  },
  worktrees: {
    usage:
      '  worktrees list [--json]             the code-work worktrees: repo, branch, conversation, age, state\n' +
      '  worktrees remove BRANCH [--force]   remove one (refused while its change card waits, unless --force)',
    options: { json: flag, force: flag },
    positionals: true,
  },
};

export const USAGE = `Usage: countersign <command> [--help]

Commands:
${Object.values(COMMANDS)
  .map((c) => c.usage)
  .join('\n')}
  --version                           the version of Countersign

Exit codes: 0 done, 1 failed, 2 a wrong invocation (the line says what).
`;

/** What `countersign COMMAND --help` prints. */
export function commandHelp(command: string): string {
  return `Usage: countersign ${command} …\n\n${COMMANDS[command]!.usage}\n`;
}

/** Whether the arguments ask for help (before `--`, after which everything is a positional). */
export function asksHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/**
 * Why `args` are not a valid invocation of `command`, in one line, or undefined when they are.
 * Only the shape is checked here (options known, values present); each command checks its values.
 */
export function invocationProblem(command: string, args: string[]): string | undefined {
  const spec = COMMANDS[command]!;
  try {
    parseArgs({ args, options: spec.options, allowPositionals: spec.positionals, strict: true });
    return undefined;
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    const quoted = /'([^']+)'/.exec(message ?? '')?.[1] ?? '';
    const see = `(see countersign ${command} --help)`;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `countersign ${command}: unknown option ${quoted} ${see}`;
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
      return `countersign ${command} takes no arguments, only options (got ${quoted}) ${see}`;
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE')
      return `countersign ${command}: ${(message ?? '').split('\n')[0]} ${see}`;
    throw error;
  }
}
