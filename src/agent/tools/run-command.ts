import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { isUtf8 } from 'node:buffer';
import { z } from 'zod';
import { INBOX_DIR, inboxFolderOf } from '../../core/inbox.ts';
import { ConfinementError } from '../../sandbox/bwrap-arguments.ts';
import { gitFoldersOf } from '../../sandbox/git-folders.ts';
import { SandboxUnavailableError, type Launch, type ProgramSandbox } from '../../sandbox/sandbox.ts';
import { defineBuiltinTool, type ToolContext, type ToolOutput } from './tool.ts';
import { displayPath, resolveInWorkspace, WorkspacePathError } from './workspace/confine.ts';
import type { WorkspaceRoots } from './workspace/access.ts';

export const RUN_COMMAND_LIMITS = {
  /** Bytes kept of each of stdout and stderr. */
  outputBytes: 64 * 1024,
  defaultTimeoutSeconds: 60,
  maxTimeoutSeconds: 600,
  /** After the program exits, how long to wait for pipes a detached grandchild may still hold. */
  pipeGraceMs: 1_000,
  /**
   * Past its own timeout, how long a run may take to be killed and reported (the kill, the exit,
   * pipeGraceMs): the loop abandons a run only after timeout + this.
   */
  killGraceSeconds: 5,
  argCount: 100,
  argChars: 4096,
} as const;

export const RUN_COMMAND = 'run_command';

/** What the system prompt says when running commands is switched off. */
const RUN_COMMAND_OFF_NOTE =
  'Running programs is switched off in this deployment (ENABLE_RUN_COMMAND=false): there is no run_command tool. If a request needs one, say so and suggest what the person can run themselves.';

/** The system-prompt sentence about run_command: empty when it is on (its description says enough). */
export function runCommandPromptNote(enabled: boolean): string {
  return enabled ? '' : RUN_COMMAND_OFF_NOTE;
}

/** Quotes an argument the way a POSIX shell needs it, so the approval card shows the exact argv. */
export function shellQuote(arg: string): string {
  if (arg === '') return "''";
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

const RunCommandArgs = z.object({
  command: z
    .array(z.string().max(RUN_COMMAND_LIMITS.argChars))
    .min(1)
    .max(RUN_COMMAND_LIMITS.argCount)
    .refine((argv) => argv[0] !== '', 'the program name (the first element) must not be empty')
    .describe(
      'The program and its arguments, e.g. ["git", "status"]. No shell: pipes, globs and $VARS are not expanded.',
    ),
  cwd: z.string().max(1024).default('.').describe('Working directory, relative to the workspace'),
  timeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(RUN_COMMAND_LIMITS.maxTimeoutSeconds)
    .default(RUN_COMMAND_LIMITS.defaultTimeoutSeconds),
});
type RunCommandArgs = z.infer<typeof RunCommandArgs>;

/** Keeps the first `outputBytes` of a stream, counting what it drops. */
class CappedOutput {
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  dropped = 0;

  add(chunk: Buffer): void {
    const room = RUN_COMMAND_LIMITS.outputBytes - this.#kept;
    if (room > 0) {
      const part = chunk.subarray(0, room);
      this.#chunks.push(part);
      this.#kept += part.length;
    }
    this.dropped += Math.max(0, chunk.length - Math.max(0, room));
  }

  text(): string {
    // A multi-byte character cut at the cap decodes to U+FFFD, which is honest about the cut.
    return Buffer.concat(this.#chunks).toString('utf8');
  }

  /** Whether what was kept is not all UTF-8 (binary output): its decoding then shows U+FFFD. */
  notUtf8(): boolean {
    return !isUtf8(Buffer.concat(this.#chunks));
  }
}

function section(name: string, output: CappedOutput): string {
  const text = output.text();
  let body = text ? `${name}:\n${text}${text.endsWith('\n') ? '' : '\n'}` : `${name}: (empty)\n`;
  if (output.notUtf8()) body += `[${name} held bytes that are not UTF-8, shown as U+FFFD]\n`;
  return output.dropped
    ? `${body}[${name} truncated: kept the first ${RUN_COMMAND_LIMITS.outputBytes} bytes, dropped ${output.dropped}]\n`
    : body;
}

/** A program to run, where, and how its run is reported. */
interface ProgramRun {
  /** The program's name, for a start error. */
  program: string;
  launch: Launch;
  timeoutSeconds: number;
  signal: AbortSignal;
  /** The command line heading the result. */
  shown: string;
}

/**
 * Runs a program inside the workspace. Registered only when ENABLE_RUN_COMMAND=true, and every run
 * needs a person's approval. No shell: argv is executed as given, in `sandbox` (src/sandbox: the
 * workspace its only writable path, the bot's files and /proc out of sight), in its own process
 * group (so a timeout or a stop kills its children too), with an allowlisted environment and capped output.
 */
export function createRunCommandTool(root: string, sandbox: ProgramSandbox, rootOf?: WorkspaceRoots) {
  const rootFor = (ctx: { conversationId: string }) => rootOf?.(ctx.conversationId) ?? root;
  return defineBuiltinTool<RunCommandArgs>({
    name: RUN_COMMAND,
    kind: 'exec',
    description:
      'Runs a program in the workspace and returns its exit code, stdout and stderr. Give argv as a list (no shell). A person approves every run.',
    version: '2',
    input: RunCommandArgs,
    approval: 'always',
    risk: 'high',
    idempotent: false,
    timeLimitSeconds: ({ timeoutSeconds }, defaultSeconds) =>
      Math.max(defaultSeconds, timeoutSeconds + RUN_COMMAND_LIMITS.killGraceSeconds),
    describeForApproval: async (raw, ctx) =>
      `${await describeRunCommand(rootFor(ctx), raw)}\n${sandbox.describe('run_command')}`,
    execute: (args, ctx) => {
      const own = rootOf?.(ctx.conversationId);
      // Received files are saved under the shared workspace's inbox/; a worktree's `inbox` is the repository's.
      return runCommand(own ?? root, sandbox, args, ctx, { sharedWorkspace: own === undefined });
    },
  });
}

/** A folder inside the workspace as the card shows it (`.` for the root). */
async function workspaceDir(root: string, cwd: string): Promise<string> {
  return displayPath(await resolveInWorkspace(root, '.'), await resolveInWorkspace(root, cwd));
}

/** The approval card's view of a run: the exact argv, the folder, the timeout. */
async function describeRunCommand(root: string, raw: unknown): Promise<string> {
  // Approval cards pass the arguments as the model sent them, before defaults.
  const parsed = RunCommandArgs.safeParse(raw);
  if (!parsed.success) return 'These arguments are not valid for run_command; it will refuse them.';
  const { command, cwd, timeoutSeconds } = parsed.data;
  let dir: string;
  try {
    dir = await workspaceDir(root, cwd);
  } catch (error) {
    dir = `refused: ${error instanceof WorkspacePathError ? error.message : 'not a workspace path'}`;
  }
  return [
    `$ ${command.map(shellQuote).join(' ')}`,
    `in: ${dir === '.' ? '. (workspace root)' : dir}`,
    `timeout: ${timeoutSeconds} s · no shell · risk: high`,
  ].join('\n');
}

async function runCommand(
  root: string,
  sandbox: ProgramSandbox,
  { command, cwd, timeoutSeconds }: RunCommandArgs,
  ctx: ToolContext,
  { sharedWorkspace }: { sharedWorkspace: boolean },
): Promise<ToolOutput> {
  let dir: string;
  try {
    dir = await resolveInWorkspace(root, cwd);
  } catch (error) {
    return { content: (error as Error).message, isError: true };
  }
  if (ctx.signal.aborted) return { content: 'Not run: the turn was stopped.', isError: true };
  const program = command[0]!;
  const workspace = await resolveInWorkspace(root, '.');
  const shown = `$ ${command.map(shellQuote).join(' ')}  (in ${displayPath(workspace, dir)})`;
  // Every conversation's inbox is hidden only where inbox/ exists: made now, a program cannot plant
  // one that is a link (where files sent later in other conversations would be saved).
  if (sharedWorkspace)
    await mkdir(path.join(workspace, INBOX_DIR)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
  let launch: Launch;
  try {
    launch = await sandbox.launch(command, {
      cwd: dir,
      writable: [workspace],
      // git works in a worktree (read-only: refs and hooks stay the bot's to change).
      readable: await gitFoldersOf(workspace),
      // Files people sent in other conversations are not this run's to read.
      hidden: sharedWorkspace
        ? [
            {
              path: path.join(workspace, INBOX_DIR),
              except: path.join(workspace, INBOX_DIR, inboxFolderOf(ctx.conversationId)),
            },
          ]
        : [],
      network: sandbox.allowsNetwork('run_command'),
      env: {},
    });
  } catch (error) {
    if (error instanceof SandboxUnavailableError || error instanceof ConfinementError)
      return { content: `${shown}\n${error.message}`, isError: true };
    throw error;
  }
  try {
    return await runProgram({ program, launch, timeoutSeconds, signal: ctx.signal, shown });
  } finally {
    await launch.dispose();
  }
}

/** Kills the program's whole process group, so children it started die with it. */
function killGroup(child: ChildProcess): void {
  try {
    if (child.pid) process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

/** The result of a finished run: the command, how it ended, and both outputs. */
function report(
  run: ProgramRun,
  ending: { killedBecause: string; code: number | null; signal: NodeJS.Signals | null },
  stdout: CappedOutput,
  stderr: CappedOutput,
): ToolOutput {
  const { killedBecause, code, signal } = ending;
  const status = killedBecause
    ? `killed: ${killedBecause}`
    : code !== null
      ? `exit code ${code}`
      : `terminated by ${signal}`;
  return {
    content: `${run.shown}\n${status}\n${section('stdout', stdout)}${section('stderr', stderr)}`.trimEnd(),
    isError: Boolean(killedBecause) || code !== 0,
  };
}

/** Runs the program in its own process group, killed at its timeout or when the turn stops. */
function runProgram(run: ProgramRun): Promise<ToolOutput> {
  const { program, launch, timeoutSeconds, signal: stop } = run;
  return new Promise<ToolOutput>((resolve) => {
    const child = spawn(launch.command, launch.args, {
      ...(launch.cwd ? { cwd: launch.cwd } : {}),
      env: launch.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const stdout = new CappedOutput();
    const stderr = new CappedOutput();
    child.stdout.on('data', (chunk: Buffer) => stdout.add(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.add(chunk));
    let killedBecause = '';
    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;
    const kill = (why: string) => {
      if (killedBecause) return;
      killedBecause = why;
      killGroup(child);
    };
    const timer = setTimeout(() => kill(`timed out after ${timeoutSeconds} s`), timeoutSeconds * 1000);
    const onAbort = () => kill('the turn was stopped');
    stop.addEventListener('abort', onAbort, { once: true });
    // A stop that landed during the awaits above fired before the listener existed.
    if (stop.aborted) onAbort();
    const finish = (output: ToolOutput) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      stop.removeEventListener('abort', onAbort);
      resolve(output);
    };
    const ended = (code: number | null, signal: NodeJS.Signals | null) =>
      finish(report(run, { killedBecause, code, signal }, stdout, stderr));
    child.on('error', (error: NodeJS.ErrnoException) => {
      const reason = error.code === 'ENOENT' ? 'no such program on PATH' : (error.code ?? 'error');
      finish({ content: `Could not start ${shellQuote(program)}: ${reason}.`, isError: true });
    });
    child.on('exit', (code, signal) => {
      // "close" waits for the pipes; a grandchild that left the group could hold them open forever.
      graceTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        ended(code, signal);
      }, RUN_COMMAND_LIMITS.pipeGraceMs);
    });
    child.on('close', (code, signal) => ended(code, signal));
  });
}
