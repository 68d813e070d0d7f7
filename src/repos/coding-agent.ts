import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { z } from 'zod';
import type { RunBill } from '../agent/model-spend.ts';
import { ConfinementError } from '../sandbox/bwrap-arguments.ts';
import { gitFoldersOf } from '../sandbox/git-folders.ts';
import { SandboxUnavailableError, type Launch, type ProgramSandbox } from '../sandbox/sandbox.ts';
import { safeGitEnvironment } from './git.ts';

/**
 * An external coding agent (CODING_AGENT_COMMAND, e.g. a coding CLI run non-interactively) run in a
 * conversation's worktree instead of the built-in agent loop (issue #33, "External coding agents").
 * Its stdout lines become progress in markdown — never bare JSON objects: the predecessor ("Chad")
 * learnt that a CLI such as Codex takes a bare JSON object in the conversation for a completion
 * signal and stops before doing the work. What it changed reaches the base branch only through the
 * change card, like any other code turn.
 */

/** How long a run may take before it is stopped, unless its caller says otherwise. */
export const CODING_AGENT_TIMEOUT_MS = 30 * 60 * 1000;

const LIMITS = {
  defaultTimeoutMs: CODING_AGENT_TIMEOUT_MS,
  /** After SIGTERM, how long the process group has before SIGKILL. */
  killGraceMs: 2_000,
  /** After the agent exits, how long to wait for pipes a grandchild that left the group may hold. */
  pipeGraceMs: 1_000,
  /** Characters of stdout and of stderr kept for the summary (the last ones). */
  keptChars: 64 * 1024,
  /** A longer line is cut here and the rest of it dropped (stream-json tool results can be large). */
  lineChars: 4 * 1024 * 1024,
  /** One plain line or one assistant text as progress. */
  progressChars: 1_500,
  /** The part of a tool call's input shown beside its name. */
  toolDetailChars: 80,
  toolNameChars: 60,
  /** Progress lines a summary falls back to when the agent reported no result. */
  summaryLines: 20,
  stderrLines: 10,
  summaryChars: 8_000,
} as const;

export interface CodingAgentOptions {
  /** CODING_AGENT_COMMAND, parsed. An element containing "{task}" gets the task; if none does, the task goes to stdin. */
  argv: string[];
  /** What "{budget_usd}" in `argv` becomes: the dollars the run is held at, for a CLI's own spend cap. */
  budgetUsd?: number;
  /** The worktree. */
  cwd: string;
  task: string;
  /** Aborted: the whole process group is stopped (SIGTERM, then SIGKILL after a grace). */
  signal: AbortSignal;
  /** Called per meaningful output line, with markdown. */
  onProgress(markdown: string): void;
  /** Default 30 minutes; past it the agent is stopped and the result says so. */
  timeoutMs?: number;
  /** Where the variables in `passed` are read; default: this process's environment. */
  env?: NodeJS.ProcessEnv;
  /** Variables the agent gets besides the sandbox's allowlist (CODING_AGENT_ENV): its model API key. */
  passed: readonly string[];
  /** Variables the agent never gets, even when `passed` names them (CODING_AGENT_WITHHELD of src/config.ts). */
  withheld: ReadonlySet<string>;
  /** Where it runs (src/sandbox): the worktree its only writable path, the bot's files and /proc out of sight. */
  sandbox: ProgramSandbox;
}

export interface CodingAgentResult {
  summary: string;
  /** What the run reported it spent (stream-json `result`); empty when it reported nothing. */
  spent: RunBill;
  exitCode: number | null;
  stopped: boolean;
  timedOut: boolean;
}

// ---------------------------------------------------------------------------------------------
// CODING_AGENT_COMMAND

const CommandArray = z.array(z.string().min(1, 'an element is empty')).min(1, 'the array is empty');

/**
 * Parses CODING_AGENT_COMMAND: a JSON array of strings, or a plain string split on whitespace (no
 * shell, no quotes processing beyond JSON). Throws a readable Error on bad input.
 */
export function parseCodingAgentCommand(value: string): string[] {
  const text = value.trim();
  if (!text) {
    throw new Error(
      'CODING_AGENT_COMMAND is empty: give the program and its arguments, e.g. claude -p {task} --output-format stream-json --verbose',
    );
  }
  if (!text.startsWith('[')) return text.split(/\s+/);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(
      `CODING_AGENT_COMMAND starts with "[" but is not valid JSON (${(error as Error).message}): give a JSON array of strings such as ["claude", "-p", "{task}"], or a plain space-separated command`,
      { cause: error },
    );
  }
  const checked = CommandArray.safeParse(parsed);
  if (!checked.success) {
    const problem = checked.error.issues[0]?.message ?? 'not an array of strings';
    throw new Error(
      `CODING_AGENT_COMMAND must be a JSON array of non-empty strings (${problem}), e.g. ["claude", "-p", "{task}"]`,
    );
  }
  return checked.data;
}

/**
 * The argv with the task in place of "{task}" (and the run's dollars in place of "{budget_usd}"),
 * and the task for stdin when no element asks for it.
 */
function withTask(argv: readonly string[], task: string, budgetUsd?: number): { argv: string[]; stdin: string } {
  const budgeted =
    budgetUsd === undefined ? [...argv] : argv.map((arg) => arg.replaceAll('{budget_usd}', String(budgetUsd)));
  const placed = budgeted.some((arg) => arg.includes('{task}'));
  return placed
    ? { argv: budgeted.map((arg) => arg.replaceAll('{task}', () => task)), stdin: '' }
    : { argv: budgeted, stdin: task };
}

// ---------------------------------------------------------------------------------------------
// Environment

/**
 * The variables `passed` names, never one of the bot's own secrets (`withheld`: the deployment's
 * secret variables, its chat platforms' tokens among them): a coding agent works in a repository a
 * person may not trust. The sandbox adds PATH, LANG, TERM and a private HOME; nothing else comes.
 */
function agentEnvironment(
  env: NodeJS.ProcessEnv,
  passed: readonly string[],
  withheld: ReadonlySet<string>,
): Record<string, string> {
  const kept = passed.flatMap((name) => {
    const value = env[name];
    return value === undefined || withheld.has(name.toUpperCase()) || name.startsWith('GIT_CONFIG_')
      ? []
      : [[name, value] as const];
  });
  return Object.fromEntries(kept);
}

// ---------------------------------------------------------------------------------------------
// Output lines → progress

/** Terminal colour and cursor sequences a CLI may print even into a pipe. */
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;

function cap(text: string, chars: number): string {
  return text.length > chars ? `${text.slice(0, chars - 1)}…` : text;
}

/** A value shown inside a markdown code span: one line, capped, no backtick that could close it. */
function codeSpan(value: string, chars: number): string {
  const flat = value.replace(/\s+/g, ' ').replace(CONTROL, '').trim();
  return `\`${cap(flat.replaceAll('`', 'ˋ'), chars)}\``;
}

const DETAIL_KEYS = ['file_path', 'notebook_path', 'path', 'command', 'pattern', 'url', 'query', 'description'];

/** "• Edit `src/a.ts`": a tool call as one short line. */
function toolLine(name: unknown, input: unknown): string {
  const shownName = cap(
    String(typeof name === 'string' && name ? name : 'tool').replace(/[\s`]+|\p{C}/gu, ''),
    LIMITS.toolNameChars,
  );
  const fields = input && typeof input === 'object' ? (input as Record<string, unknown>) : {};
  const key = DETAIL_KEYS.find((k) => typeof fields[k] === 'string' && fields[k]);
  return key ? `• ${shownName} ${codeSpan(fields[key] as string, LIMITS.toolDetailChars)}` : `• ${shownName}`;
}

interface StreamEvent {
  progress?: string;
  /** A `result` event: what the agent says it did, and what it reported it spent. */
  result?: { text: string; isError: boolean; spent: RunBill };
}

// What a Claude Code `result` event reports it spent (code.claude.com/docs/en/agent-sdk/cost-tracking):
// `total_cost_usd`, the run's cumulative `usage`, and `modelUsage` per model, which also counts the
// subagents' requests that `usage` leaves out. A field that is not as documented counts as not reported;
// token counts without their input and output numbers (null, or named otherwise by another CLI) are not
// a report of zero tokens: the hold is spent whole.
const Count = z.number().nonnegative().nullish();
const Counted = z.number().nonnegative();
const Tokens = z.object({
  input_tokens: Counted,
  output_tokens: Counted,
  cache_read_input_tokens: Count,
  cache_creation_input_tokens: Count,
});
const ModelTokens = z.object({
  inputTokens: Counted,
  outputTokens: Counted,
  cacheReadInputTokens: Count,
  cacheCreationInputTokens: Count,
});
const ReportedSpend = z.object({
  total_cost_usd: Count.catch(undefined),
  usage: Tokens.optional().catch(undefined),
  modelUsage: z
    .record(z.string(), ModelTokens)
    .refine((models) => Object.keys(models).length > 0)
    .optional()
    .catch(undefined),
});

const sum = (counts: Array<number | null | undefined>): number => counts.reduce<number>((a, n) => a + (n ?? 0), 0);

/** The dollars and tokens (input, output, cache reads and writes) a `result` event reports. */
function spentOf(event: Record<string, unknown>): RunBill {
  const reported = ReportedSpend.safeParse(event);
  if (!reported.success) return {};
  const { total_cost_usd: usd, usage, modelUsage } = reported.data;
  const totals = [
    ...(usage
      ? [
          sum([
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_input_tokens,
            usage.cache_creation_input_tokens,
          ]),
        ]
      : []),
    ...(modelUsage
      ? [
          sum(
            Object.values(modelUsage).flatMap((m) => [
              m.inputTokens,
              m.outputTokens,
              m.cacheReadInputTokens,
              m.cacheCreationInputTokens,
            ]),
          ),
        ]
      : []),
  ];
  // The larger count: never fewer tokens than either report shows.
  return { ...(typeof usd === 'number' ? { usd } : {}), ...(totals.length ? { tokens: Math.max(...totals) } : {}) };
}

function assistantProgress(message: unknown): string | undefined {
  const content = message && typeof message === 'object' ? (message as { content?: unknown }).content : undefined;
  if (!Array.isArray(content)) return undefined;
  const parts: string[] = [];
  for (const block of content as unknown[]) {
    if (!block || typeof block !== 'object') continue;
    const { type, text, name, input } = block as Record<string, unknown>;
    if (type === 'text' && typeof text === 'string' && text.trim()) parts.push(cap(text.trim(), LIMITS.progressChars));
    else if (type === 'tool_use') parts.push(toolLine(name, input));
  }
  return parts.length ? parts.join('\n') : undefined;
}

/** A Claude-style stream-json event; anything unknown carries nothing to show. */
function streamEvent(event: Record<string, unknown>): StreamEvent {
  if (event.type === 'assistant') return { progress: assistantProgress(event.message) };
  if (event.type === 'result') {
    const isError = event.is_error === true;
    const text = typeof event.result === 'string' ? event.result.trim() : '';
    const subtype = typeof event.subtype === 'string' ? event.subtype : 'error';
    return {
      result: {
        text: text || (isError ? `The coding agent reported an error (${subtype}).` : ''),
        isError,
        spent: spentOf(event),
      },
    };
  }
  return {};
}

/** A plain output line as terminal would show it: after the last carriage return, no colours. */
function plainText(line: string): string {
  const shown =
    line
      .split('\r')
      .filter((part) => part.trim())
      .at(-1) ?? '';
  return cap(shown.replace(ANSI, '').replace(CONTROL, '').trim(), LIMITS.progressChars);
}

function parseLine(line: string): StreamEvent {
  const text = line.trim();
  if (text.startsWith('{') || text.startsWith('[')) {
    try {
      const value: unknown = JSON.parse(text);
      return value && typeof value === 'object' && !Array.isArray(value)
        ? streamEvent(value as Record<string, unknown>)
        : {};
    } catch {
      // Text that opens like an object (a cut stream-json line) is never shown; "[INFO] …" is plain text.
      if (text.startsWith('{')) return {};
    }
  }
  const plain = plainText(line);
  return plain ? { progress: plain } : {};
}

/** One output line as progress markdown, or undefined when it carries nothing to show. Exported for tests. */
export function progressOfLine(line: string): string | undefined {
  return parseLine(line).progress;
}

// ---------------------------------------------------------------------------------------------
// Collecting output

/** Splits a byte stream into lines, across chunks and multi-byte characters; over-long lines are cut. */
class LineSplitter {
  readonly #decoder = new StringDecoder('utf8');
  readonly #onLine: (line: string) => void;
  #partial = '';
  #skipping = false;

  constructor(onLine: (line: string) => void) {
    this.#onLine = onLine;
  }

  push(chunk: Buffer): void {
    this.#feed(this.#decoder.write(chunk));
  }

  end(): void {
    this.#feed(this.#decoder.end());
    if (this.#partial && !this.#skipping) this.#onLine(this.#partial);
    this.#partial = '';
  }

  #feed(text: string): void {
    let start = 0;
    for (let newline = text.indexOf('\n'); newline !== -1; newline = text.indexOf('\n', start)) {
      this.#take(text.slice(start, newline), true);
      start = newline + 1;
    }
    this.#take(text.slice(start), false);
  }

  #take(piece: string, complete: boolean): void {
    if (!this.#skipping) {
      this.#partial += piece;
      if (this.#partial.length > LIMITS.lineChars) {
        this.#onLine(this.#partial.slice(0, LIMITS.lineChars));
        this.#partial = '';
        this.#skipping = true;
      }
    }
    if (complete) {
      if (!this.#skipping) this.#onLine(this.#partial);
      this.#partial = '';
      this.#skipping = false;
    }
  }
}

/** The last non-empty lines of some text, at most `keptChars` of them. */
class TailLines {
  readonly #lines: string[] = [];
  #chars = 0;

  add(text: string): void {
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      this.#lines.push(line);
      this.#chars += line.length;
      while (this.#chars > LIMITS.keptChars && this.#lines.length > 1) this.#chars -= this.#lines.shift()!.length;
    }
  }

  last(count: number): string[] {
    return this.#lines.slice(-count);
  }
}

/** What a run printed: progress (passed on), the result event, the tail of stderr. */
class AgentOutput {
  readonly progress = new TailLines();
  readonly stderr = new TailLines();
  result: { text: string; isError: boolean; spent: RunBill } | undefined;
  readonly #onProgress: (markdown: string) => void;

  constructor(onProgress: (markdown: string) => void) {
    this.#onProgress = onProgress;
  }

  stdoutLine(line: string): void {
    const event = parseLine(line);
    if (event.result) this.result = event.result;
    if (!event.progress) return;
    this.progress.add(event.progress);
    try {
      this.#onProgress(event.progress);
    } catch {
      // A failing progress consumer (a chat edit that failed) must not end the agent's run.
    }
  }

  stderrLine(line: string): void {
    const plain = plainText(line);
    if (plain) this.stderr.add(plain);
  }
}

// ---------------------------------------------------------------------------------------------
// The process

interface Ending {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Why we ended it, if we did. */
  ended?: 'stopped' | 'timedOut';
  /** It could not be started. */
  startError?: string;
}

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  try {
    if (pid) process.kill(-pid, signal);
  } catch {
    // The group is gone already.
  }
}

interface ProcessRun {
  /** The agent's program, for a start error. */
  program: string;
  launch: Launch;
  stdin: string;
  timeoutMs: number;
  signal: AbortSignal;
  output: AgentOutput;
}

/**
 * Runs the agent in its own process group (so a stop reaches every process it started), pipes its
 * output into `output`, and resolves once it has ended and its group is killed.
 */
function runProcess(run: ProcessRun): Promise<Ending> {
  const { program, launch } = run;
  return new Promise<Ending>((resolve) => {
    const child = spawn(launch.command, launch.args, {
      ...(launch.cwd ? { cwd: launch.cwd } : {}),
      env: launch.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const stdout = new LineSplitter((line) => run.output.stdoutLine(line));
    const stderr = new LineSplitter((line) => run.output.stderrLine(line));
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    // An agent that exits without reading its stdin must not crash us with EPIPE.
    child.stdin.on('error', () => undefined);
    child.stdin.end(run.stdin);

    let ended: Ending['ended'];
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const end = (why: NonNullable<Ending['ended']>) => {
      if (ended || settled) return;
      ended = why;
      signalGroup(child.pid, 'SIGTERM');
      timers.push(setTimeout(() => signalGroup(child.pid, 'SIGKILL'), LIMITS.killGraceMs));
    };
    const onAbort = () => end('stopped');
    timers.push(setTimeout(() => end('timedOut'), run.timeoutMs));
    run.signal.addEventListener('abort', onAbort, { once: true });

    const finish = (ending: Ending) => {
      if (settled) return;
      settled = true;
      // Whatever the agent left running in its group (a watcher, a server) ends with it.
      signalGroup(child.pid, 'SIGKILL');
      for (const timer of timers) clearTimeout(timer);
      run.signal.removeEventListener('abort', onAbort);
      stdout.end();
      stderr.end();
      resolve(ending);
    };
    child.on('error', (error: NodeJS.ErrnoException) => {
      const reason = error.code === 'ENOENT' ? 'no such program' : (error.code ?? error.message);
      finish({ exitCode: null, signal: null, startError: `${program}: ${reason}` });
    });
    child.on('exit', (code, signal) => {
      if (settled) return;
      // "close" waits for the pipes; a grandchild that left the group could hold them open forever.
      timers.push(
        setTimeout(() => {
          child.stdout.destroy();
          child.stderr.destroy();
          finish({ exitCode: code, signal, ended });
        }, LIMITS.pipeGraceMs),
      );
    });
    child.on('close', (code, signal) => finish({ exitCode: code, signal, ended }));
  });
}

// ---------------------------------------------------------------------------------------------
// Summary

function fenced(lines: string[]): string {
  return ['```', ...lines.map((line) => line.replaceAll('```', 'ˋˋˋ')), '```'].join('\n');
}

/** What the agent did: its result, else the last of its progress. */
function workDone(output: AgentOutput): string {
  if (output.result?.text) return output.result.text;
  const lines = output.progress.last(LIMITS.summaryLines);
  return lines.length ? lines.join('\n') : '';
}

function failureSummary(ending: Ending, output: AgentOutput): string {
  const how =
    ending.exitCode !== null
      ? `failed with exit code ${ending.exitCode}`
      : `was ended by ${ending.signal ?? 'a signal'}`;
  const errors = output.stderr.last(LIMITS.stderrLines);
  const done = workDone(output);
  return [
    `The coding agent ${how}.`,
    ...(errors.length ? ['Last lines of its error output:', fenced(errors)] : []),
    ...(done ? [done] : []),
  ].join('\n');
}

function summarise(ending: Ending, output: AgentOutput, timeoutMs: number): string {
  const done = workDone(output);
  let summary: string;
  if (ending.startError) summary = `The coding agent could not be started (${ending.startError}).`;
  else if (ending.ended === 'stopped') summary = ['The coding agent was stopped.', done].filter(Boolean).join('\n');
  else if (ending.ended === 'timedOut') {
    const limit = timeoutMs >= 60_000 ? `${Math.round(timeoutMs / 60_000)} min` : `${timeoutMs / 1000} s`;
    summary = [`The coding agent ran past its time limit (${limit}) and was stopped.`, done].filter(Boolean).join('\n');
  } else if (ending.exitCode !== 0) summary = failureSummary(ending, output);
  else if (output.result?.isError) summary = `The coding agent reported an error.\n${done}`;
  else summary = done || 'The coding agent finished without saying what it did.';
  return cap(summary, LIMITS.summaryChars);
}

// ---------------------------------------------------------------------------------------------

/**
 * Runs CODING_AGENT_COMMAND in the worktree on one task: no shell, in the sandbox, its own process
 * group, an allowlisted environment. Streams progress, and resolves with a summary however it ends.
 */
export async function runCodingAgent(options: CodingAgentOptions): Promise<CodingAgentResult> {
  if (options.argv.length === 0 || !options.argv[0]) throw new Error('runCodingAgent: argv names no program');
  if (options.signal.aborted) {
    return {
      summary: 'The coding agent was stopped before it started.',
      // Nothing ran: nothing was spent.
      spent: { usd: 0, tokens: 0 },
      exitCode: null,
      stopped: true,
      timedOut: false,
    };
  }
  const timeoutMs = options.timeoutMs ?? LIMITS.defaultTimeoutMs;
  const output = new AgentOutput(options.onProgress);
  const { argv, stdin } = withTask(options.argv, options.task, options.budgetUsd);
  const program = argv[0]!;
  let launch: Launch;
  try {
    launch = await options.sandbox.launch(argv, {
      cwd: options.cwd,
      writable: [options.cwd],
      // Read-only: the agent reads history, and moves no ref (the base branch least of all).
      readable: await gitFoldersOf(options.cwd),
      hidden: [],
      network: options.sandbox.allowsNetwork('coding_agent'),
      env: {
        ...agentEnvironment(options.env ?? process.env, options.passed, options.withheld),
        // Any git the agent runs in the worktree runs none of the repository's programs either.
        ...((await safeGitEnvironment(options.cwd)) as Record<string, string>),
      },
    });
  } catch (error) {
    if (!(error instanceof SandboxUnavailableError || error instanceof ConfinementError)) throw error;
    return {
      summary: cap(`The coding agent was ${error.message}`, LIMITS.summaryChars),
      spent: { usd: 0, tokens: 0 },
      exitCode: null,
      stopped: false,
      timedOut: false,
    };
  }
  let ending: Ending;
  try {
    ending = await runProcess({ program, launch, stdin, timeoutMs, signal: options.signal, output });
  } finally {
    await launch.dispose();
  }
  return {
    summary: summarise(ending, output, timeoutMs),
    // A program that could not be started spent nothing; one that reported nothing, an unknown amount.
    spent: ending.startError ? { usd: 0, tokens: 0 } : (output.result?.spent ?? {}),
    exitCode: ending.exitCode,
    stopped: ending.ended === 'stopped',
    timedOut: ending.ended === 'timedOut',
  };
}
