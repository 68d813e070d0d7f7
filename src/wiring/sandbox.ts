import { homedir } from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { ConfigError, INSTALL_DIR, type Config } from '../config.ts';
import { realPath, within, type SandboxLayout } from '../sandbox/bwrap-arguments.ts';
import { openProgramSandbox, probeBubblewrap, ProgramSandbox } from '../sandbox/sandbox.ts';

export type SandboxConfig = Pick<
  Config,
  | 'SANDBOX'
  | 'SANDBOX_NETWORK'
  | 'SANDBOX_READ_PATHS'
  | 'ENABLE_RUN_COMMAND'
  | 'CODING_AGENT_COMMAND'
  | 'MCP_CONFIG'
  | 'EMBEDDED_POSTGRES_DIR'
  | 'WORKTREES_DIR'
>;

/**
 * The bot's own paths, which no sandboxed program sees: its checkout, `.env`, its data (embedded
 * Postgres, worktrees, `.data`), and the $HOME it runs with. Relative settings resolve as the rest
 * of the app resolves them, against the current directory.
 */
function botPaths(config: Pick<Config, 'EMBEDDED_POSTGRES_DIR' | 'WORKTREES_DIR'>): string[] {
  const here = (p: string) => path.resolve(process.cwd(), p);
  return [
    INSTALL_DIR,
    here('.env'),
    here('.data'),
    here(config.EMBEDDED_POSTGRES_DIR),
    here(config.WORKTREES_DIR),
    homedir(),
  ];
}

/** Granted paths that would show one of the bot's own (SANDBOX_READ_PATHS=/ shows everything). */
function grantProblems(granted: readonly string[], own: readonly string[]): string[] {
  return granted.flatMap((grant) => {
    const real = realPath(grant);
    const shown = own.map(realPath).find((p) => within(p, real));
    return shown ? [`SANDBOX_READ_PATHS: ${grant} holds ${shown}, which sandboxed programs must not see`] : [];
  });
}

/**
 * The sandbox every program of this process starts in, checked once at start-up. Nothing is tried
 * where nothing starts programs (the console demo). Where no sandbox can run, one line says so and
 * programs are refused (SANDBOX=auto), or the start fails (SANDBOX=on).
 */
export async function openSandbox(
  config: SandboxConfig,
  log: Logger,
  { runsTurns }: { runsTurns: boolean },
  probe: typeof probeBubblewrap = probeBubblewrap,
): Promise<ProgramSandbox> {
  const own = botPaths(config);
  // The Node that runs the bot: `node` programs (an MCP server, a coding CLI) run on it.
  const granted = [...config.SANDBOX_READ_PATHS, path.dirname(realPath(process.execPath))];
  const problems = grantProblems(config.SANDBOX_READ_PATHS, own);
  if (problems.length) throw new ConfigError(problems);
  const layout: SandboxLayout = { granted, protected: own };
  const startsPrograms =
    runsTurns && (config.ENABLE_RUN_COMMAND || Boolean(config.CODING_AGENT_COMMAND) || Boolean(config.MCP_CONFIG));
  if (!startsPrograms)
    return new ProgramSandbox({ kind: 'unavailable', reason: 'this process starts no programs' }, layout);
  const sandbox = await openProgramSandbox(config.SANDBOX, layout, config.SANDBOX_NETWORK, () => probe());
  const status = sandbox.status;
  if (status.kind === 'confined')
    log.info({ bwrap: status.bwrap, network: config.SANDBOX_NETWORK }, 'programs run in a sandbox (bubblewrap)');
  else if (status.kind === 'off')
    log.warn(
      'SANDBOX=off: programs run as the bot itself and can read its environment, files and secrets (docs/sandbox.md)',
    );
  else if (config.SANDBOX === 'on')
    throw new ConfigError([`SANDBOX=on, but no sandbox can run here: ${status.reason} (docs/sandbox.md)`]);
  else
    log.warn(
      `no sandbox can run here (${status.reason}): run_command, CODING_AGENT_COMMAND and sandboxed MCP servers are refused; install bubblewrap or set SANDBOX=off (docs/sandbox.md)`,
    );
  return sandbox;
}
