import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const CLI = path.resolve(import.meta.dirname, '../../src/cli.ts');

export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs `countersign <args>` as a real child process with exactly the given environment (plus PATH/HOME). */
export function runCli(args: string[], env: Record<string, string>, input?: string): CliProcess {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
    cwd: path.resolve(import.meta.dirname, '../..'),
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  if (input !== undefined) child.stdin?.end(input);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}
