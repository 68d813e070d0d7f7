import { spawn, type ChildProcess } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ProgramSandbox } from '../../../sandbox/sandbox.ts';
import type { ServerSandbox } from './config.ts';

/** How long `close()` gives a server to leave after its stdin closes, then after SIGTERM. */
const STDIO_CLOSE_GRACE_MS = 2_000;

/**
 * Process groups of the stdio servers running now. A server is often a launcher (`npx -y …`) whose
 * child does the work; ending only the launcher left `server-github` alive for a minute after
 * Countersign exited. Each server therefore runs in a process group of its own, and the whole group
 * is ended: by `close()` on a clean stop, and by the `exit` hook below on every other way out.
 */
const runningGroups = new Set<number>();

/**
 * `exit` is emitted for `process.exit()`, the event loop running dry and an uncaught exception; the
 * CLI turns SIGTERM, SIGINT and SIGHUP into `process.exit()` after shutting down. A signal that comes
 * before anyone handles it (during start-up) would end the process without `exit`: it ends the
 * groups, then the process by the same signal, as if nothing had listened. Only synchronous work runs
 * here, so the groups get SIGTERM and no wait. (Nothing runs on SIGKILL; a server then sees its stdin
 * close.)
 */
let exitHookInstalled = false;
function endGroupsOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  const endAll = () => {
    for (const group of runningGroups) signalGroup(group, 'SIGTERM');
  };
  process.on('exit', endAll);
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    const unhandled = () => {
      // Someone else handles it (the CLI's shutdown, which exits through `exit`).
      if (process.listenerCount(signal) > 1) return;
      endAll();
      process.removeListener(signal, unhandled);
      process.kill(process.pid, signal);
    };
    process.on(signal, unhandled);
  }
}

/** Signals every process of the group led by `leader`; a group already gone is no error. */
function signalGroup(leader: number, signal: NodeJS.Signals): void {
  try {
    // A negative pid names the process group (POSIX). Windows has no groups: the leader alone.
    process.kill(process.platform === 'win32' ? leader : -leader, signal);
  } catch {
    // ESRCH: nothing left in the group.
  }
}

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/** Resolves when `exit` does, or after `ms`, whichever comes first. */
function within(exit: Promise<void>, ms: number): Promise<void> {
  return Promise.race([exit, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
}

export interface StdioServerProcess {
  command: string;
  args: string[];
  /** The variables the server is configured with (its `env`); a confined server gets only these and the allowlist. */
  env: Record<string, string>;
  cwd?: string;
  /**
   * Where it runs: in `sandbox`, reaching what its entry's `sandbox` names (its `cwd` read-only too);
   * or, for `"sandbox": false`, unconfined with `unconfinedEnv` (the SDK's default environment and its `env`).
   */
  confinement:
    { sandbox: ProgramSandbox; reach: Exclude<ServerSandbox, false> } | { unconfinedEnv: Record<string, string> };
}

/** The program to spawn for `server`: itself, or bubblewrap around it. */
async function launchOf(server: StdioServerProcess) {
  const { confinement } = server;
  if ('unconfinedEnv' in confinement)
    return {
      command: server.command,
      args: server.args,
      env: confinement.unconfinedEnv,
      cwd: server.cwd,
      dispose: async () => undefined,
    };
  const { sandbox, reach } = confinement;
  return sandbox.launch([server.command, ...server.args], {
    ...(server.cwd ? { cwd: server.cwd } : {}),
    writable: reach.write,
    readable: [...reach.read, ...(server.cwd ? [server.cwd] : [])],
    hidden: [],
    network: reach.network || sandbox.allowsNetwork('mcp'),
    env: server.env,
  });
}

/**
 * The MCP stdio transport (newline-delimited JSON-RPC over the server's stdin and stdout), as the
 * SDK's StdioClientTransport speaks it, with one difference: the server is spawned as the leader of
 * its own process group, and ended with that group. `stderr` is piped and readable before `start`.
 */
export class GroupedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly stderr = new PassThrough();
  readonly #server: StdioServerProcess;
  readonly #readBuffer = new ReadBuffer();
  #child: ChildProcess | undefined;
  #exit: Promise<void> | undefined;

  constructor(server: StdioServerProcess) {
    this.#server = server;
  }

  /** The server's pid (its process group's id) once started. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  async start(): Promise<void> {
    if (this.#child) throw new Error('GroupedStdioTransport already started');
    // A sandbox that cannot run refuses here: the server is down, and its connection says why.
    const launch = await launchOf(this.#server);
    return new Promise((resolve, reject) => {
      const child = spawn(launch.command, launch.args, {
        env: launch.env,
        cwd: launch.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        // A new process group (setsid): its id is the child's pid, and the terminal's Ctrl-C — which
        // the console takes as "stop the turn" — no longer reaches the server.
        detached: true,
        shell: false,
        windowsHide: true,
      });
      this.#child = child;
      this.#exit = new Promise((done) => child.once('exit', () => done()));
      child.once('close', () => void launch.dispose());
      child.once('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.once('spawn', () => {
        endGroupsOnExit();
        if (child.pid !== undefined) runningGroups.add(child.pid);
        resolve();
      });
      child.once('exit', () => {
        // The leader is gone; anything it left in its group goes with it.
        if (child.pid === undefined) return;
        signalGroup(child.pid, 'SIGTERM');
        runningGroups.delete(child.pid);
      });
      // 'close' (every stdio stream closed) rather than 'exit': messages still buffered are read first.
      child.once('close', () => {
        if (this.#child === child) this.#child = undefined;
        this.onclose?.();
      });
      child.stdin?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('data', (chunk: Buffer) => {
        this.#readBuffer.append(chunk);
        this.#deliver();
      });
      child.stderr?.pipe(this.stderr);
    });
  }

  #deliver(): void {
    for (;;) {
      try {
        const message = this.#readBuffer.readMessage();
        if (message === null) return;
        this.onmessage?.(message);
      } catch (error) {
        this.onerror?.(error as Error);
      }
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin) return Promise.reject(new Error('Not connected'));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  /**
   * Ends the server as the stdio spec asks: its stdin closes, then SIGTERM, then SIGKILL, each
   * after a grace period — sent to its whole process group.
   */
  async close(): Promise<void> {
    const child = this.#child;
    const exit = this.#exit;
    this.#child = undefined;
    this.#readBuffer.clear();
    if (!child || !exit || child.pid === undefined) return;
    const group = child.pid;
    try {
      child.stdin?.end();
    } catch {
      // already closed
    }
    await within(exit, STDIO_CLOSE_GRACE_MS);
    if (!exited(child)) {
      signalGroup(group, 'SIGTERM');
      await within(exit, STDIO_CLOSE_GRACE_MS);
    }
    if (!exited(child)) signalGroup(group, 'SIGKILL');
  }
}
