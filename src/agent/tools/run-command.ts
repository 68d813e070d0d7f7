import { spawn } from 'node:child_process';
import { z } from 'zod';
import { defineTool } from './tool.ts';
import { displayPath, resolveInWorkspace } from './workspace/confine.ts';

const OUTPUT_CAP = 64 * 1024;

/** Quotes an argument the way a POSIX shell would need it, so the approval card shows the exact command. */
export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** What the system prompt says when running commands is switched off. */
export const RUN_COMMAND_OFF_NOTE =
  'Running shell commands is switched off in this deployment (ENABLE_RUN_COMMAND); say so if a request needs it.';

/**
 * Runs a program inside the workspace. Off unless ENABLE_RUN_COMMAND=true; every run needs a
 * person's approval. No shell: argv is executed as given, with a timeout, a minimal environment,
 * and capped output.
 */
export function createRunCommandTool(root: string) {
  return defineTool({
    name: 'run_command',
    description:
      'Runs a program in the workspace (argv, no shell) and returns its exit code and output. A person approves every run.',
    version: '1',
    input: z.object({
      command: z.array(z.string().min(1).max(4096)).min(1).max(100),
      cwd: z.string().max(1024).default('.'),
      timeoutSeconds: z.number().int().min(1).max(600).default(60),
    }),
    approval: 'always',
    risk: 'high',
    idempotent: false,
    async describeForApproval({ command, cwd, timeoutSeconds }) {
      return `$ ${command.map(shellQuote).join(' ')}\n# in: ${cwd}  (workspace)\n# timeout: ${timeoutSeconds} s  risk: high`;
    },
    async execute({ command, cwd, timeoutSeconds }, ctx) {
      let dir: string;
      try {
        dir = await resolveInWorkspace(root, cwd);
      } catch (error) {
        return { content: (error as Error).message, isError: true };
      }
      return new Promise((resolve) => {
        const [program, ...args] = command as [string, ...string[]];
        const child = spawn(program, args, {
          cwd: dir,
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, LANG: 'C.UTF-8' },
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        });
        const out = { stdout: '', stderr: '', truncated: false };
        const collect = (key: 'stdout' | 'stderr') => (chunk: Buffer) => {
          if (out[key].length >= OUTPUT_CAP) {
            out.truncated = true;
            return;
          }
          out[key] += chunk.toString('utf8').slice(0, OUTPUT_CAP - out[key].length);
        };
        child.stdout.on('data', collect('stdout'));
        child.stderr.on('data', collect('stderr'));
        let reason = '';
        const kill = (why: string) => {
          reason = why;
          // The whole process group, so children of the program go too.
          if (child.pid) {
            try {
              process.kill(-child.pid, 'SIGKILL');
            } catch {
              child.kill('SIGKILL');
            }
          }
        };
        const timer = setTimeout(() => kill(`timed out after ${timeoutSeconds} s`), timeoutSeconds * 1000);
        const onAbort = () => kill('stopped');
        ctx.signal.addEventListener('abort', onAbort, { once: true });
        child.on('error', (error) => {
          clearTimeout(timer);
          resolve({ content: `Could not start ${program}: ${error.message}`, isError: true });
        });
        child.on('close', (code, signal) => {
          clearTimeout(timer);
          ctx.signal.removeEventListener('abort', onAbort);
          const status = reason ? `killed: ${reason}` : `exit code ${code ?? signal}`;
          resolve({
            content: [
              `$ ${command.map(shellQuote).join(' ')}  (in ${displayPath(root, dir)})`,
              status,
              out.stdout ? `stdout:\n${out.stdout}` : 'stdout: (empty)',
              out.stderr ? `stderr:\n${out.stderr}` : '',
              out.truncated ? `(output capped at ${OUTPUT_CAP} bytes per stream)` : '',
            ]
              .filter(Boolean)
              .join('\n'),
            isError: Boolean(reason) || code !== 0,
          });
        });
      });
    },
  });
}
