import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bwrapArguments, SANDBOX_HOME, type Confinement, type SandboxLayout } from './bwrap-arguments.ts';
import { gitConfigOverlays } from './git-config.ts';
import type { NetworkUser, SandboxMode } from './settings.ts';

/**
 * Every program the bot starts (run_command and so a repository's tests, CODING_AGENT_COMMAND, MCP
 * stdio servers) is started through a ProgramSandbox (docs/sandbox.md). Confined, it runs under
 * bubblewrap: its own PID namespace (the bot's /proc is not there), an environment built from an
 * allowlist, only the paths its run names, a private /tmp and $HOME, and no network unless allowed.
 */

/** Variables a sandboxed program gets from the bot's environment, when set; everything else is given per run. */
const PASSED_THROUGH = ['PATH', 'LANG', 'TERM'] as const;

/** How to start one program: what to spawn, with exactly this environment. */
export interface Launch {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  /** Frees what the launch made (an unconfined run's temporary home). */
  dispose(): Promise<void>;
}

/** What a tool asks of one run. */
export interface Run extends Confinement {
  /** Variables the tool passes on purpose: an MCP server's configured `env`, git's safe settings. */
  env: Record<string, string>;
}

/** Why a program was not started: no sandbox can run here and SANDBOX is not off. */
export class SandboxUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxUnavailableError';
  }
}

export type SandboxStatus =
  { kind: 'confined'; bwrap: string } | { kind: 'off' } | { kind: 'unavailable'; reason: string };

/** The environment of a program: the allowlist, a private home, and what the run passes. */
function allowlistedEnvironment(
  home: string,
  given: Record<string, string>,
  from: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = { LANG: 'C.UTF-8', PATH: '/usr/local/bin:/usr/bin:/bin' };
  for (const name of PASSED_THROUGH) {
    const value = from[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...given, HOME: home };
}

export class ProgramSandbox {
  readonly status: SandboxStatus;
  readonly #layout: SandboxLayout;
  readonly #network: ReadonlySet<NetworkUser>;

  constructor(status: SandboxStatus, layout: SandboxLayout, network: Iterable<NetworkUser> = []) {
    this.status = status;
    this.#layout = layout;
    this.#network = new Set(network);
  }

  /** One line for an approval card: where `user`'s program will run, so the approver knows what it can reach. */
  describe(user: NetworkUser): string {
    switch (this.status.kind) {
      case 'confined':
        return `sandbox: the workspace only · network ${this.allowsNetwork(user) ? 'on' : 'off'}`;
      case 'off':
        return 'sandbox: OFF (SANDBOX=off) — it runs as the bot, and can read its secrets';
      default:
        return 'sandbox: none can run here — it will be refused';
    }
  }

  /** Whether SANDBOX_NETWORK lets `user`'s programs reach the network. */
  allowsNetwork(user: NetworkUser): boolean {
    return this.#network.has(user);
  }

  /**
   * How to start `argv` under `run`. Throws SandboxUnavailableError where no sandbox can run and
   * SANDBOX is not off, and ConfinementError where the run would show the bot's own files.
   */
  async launch(argv: readonly string[], run: Run): Promise<Launch> {
    const status = this.status;
    if (status.kind === 'unavailable') {
      throw new SandboxUnavailableError(
        `not started: every program runs in a sandbox, and none can run here (${status.reason}). Install bubblewrap (Debian: apt-get install bubblewrap), or set SANDBOX=off to run programs as the bot itself (docs/sandbox.md).`,
      );
    }
    if (status.kind === 'off') {
      // Unconfined: HOME is still a fresh empty folder, never the workspace, so dotfiles the agent
      // wrote (.gitconfig, .npmrc) do not change what an approved command does.
      const home = await mkdtemp(path.join(tmpdir(), 'countersign-home-'));
      const [command = '', ...args] = argv;
      return {
        command,
        args,
        env: allowlistedEnvironment(home, run.env),
        ...(run.cwd ? { cwd: run.cwd } : {}),
        dispose: () => rm(home, { recursive: true, force: true }).catch(() => undefined),
      };
    }
    // A git folder shown read-only has its config replaced by what reading it needs (no remote's token).
    const git = await gitConfigOverlays(run.readable);
    try {
      return {
        command: status.bwrap,
        args: bwrapArguments(this.#layout, { ...run, overlays: [...(run.overlays ?? []), ...git.overlays] }, argv),
        // bwrap passes its own environment on: the program's (and the sandbox's pid 1's, in its /proc).
        env: allowlistedEnvironment(SANDBOX_HOME, run.env),
        dispose: git.dispose,
      };
    } catch (error) {
      await git.dispose();
      throw error;
    }
  }
}

/** Where bubblewrap is looked for: Debian's package puts it in /usr/bin. */
const BWRAP_CANDIDATES = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'];

/** How long the trial run may take. */
const TRIAL_TIMEOUT_MS = 10_000;

/**
 * Whether bubblewrap can confine a program here: it exists, and a trial run with every namespace
 * a real run uses exits 0 (a container without user namespaces fails this).
 */
export async function probeBubblewrap(
  candidates: readonly string[] = BWRAP_CANDIDATES,
): Promise<{ ok: true; bwrap: string } | { ok: false; reason: string }> {
  const bwrap = candidates.find((candidate) => existsSync(candidate));
  if (!bwrap) return { ok: false, reason: 'bubblewrap (bwrap) is not installed' };
  const trial = ['--ro-bind', '/', '/', '--unshare-pid', '--unshare-net', '--cap-drop', 'ALL'];
  return new Promise((resolve) => {
    execFile(
      bwrap,
      [...trial, '--proc', '/proc', '--dev', '/dev', 'true'],
      { timeout: TRIAL_TIMEOUT_MS, env: { PATH: '/usr/bin:/bin' } },
      (error, _stdout, stderr) => {
        if (!error) resolve({ ok: true, bwrap });
        else
          resolve({
            ok: false,
            reason: `a trial run of ${bwrap} failed: ${String(stderr).trim().split('\n')[0] || error.message}`,
          });
      },
    );
  });
}

/** The sandbox as SANDBOX asks: off without a trial; otherwise bubblewrap if the trial passes. */
export async function openProgramSandbox(
  mode: SandboxMode,
  layout: SandboxLayout,
  network: Iterable<NetworkUser>,
  probe: () => ReturnType<typeof probeBubblewrap> = () => probeBubblewrap(),
): Promise<ProgramSandbox> {
  if (mode === 'off') return new ProgramSandbox({ kind: 'off' }, layout, network);
  const found = await probe();
  return new ProgramSandbox(
    found.ok ? { kind: 'confined', bwrap: found.bwrap } : { kind: 'unavailable', reason: found.reason },
    layout,
    network,
  );
}

/** A sandbox that starts nothing: for tools built only to be described (their policy kinds). */
export function startsNothing(): ProgramSandbox {
  return new ProgramSandbox(
    { kind: 'unavailable', reason: 'this process starts no programs' },
    { granted: [], protected: [] },
  );
}
