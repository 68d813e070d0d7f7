import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  createRunCommandTool,
  RUN_COMMAND_LIMITS,
  runCommandPromptNote,
  shellQuote,
} from '../../../src/agent/tools/run-command.ts';
import {
  needsApproval,
  riskOf,
  timeLimitOf,
  type ToolContext,
  type ToolOutput,
} from '../../../src/agent/tools/tool.ts';
import { testToolContext } from '../../helpers/tools.ts';
import { unconfinedSandbox } from '../../helpers/sandbox.ts';

let root: string;
let tool: ReturnType<typeof createRunCommandTool>;

async function run(args: Record<string, unknown>, ctx: ToolContext = testToolContext()): Promise<Required<ToolOutput>> {
  const out = await tool.execute(tool.input.parse(args), ctx);
  return typeof out === 'string' ? { content: out, isError: false } : { isError: false, ...out };
}

/** Whether a process id is still alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

beforeEach(() => {
  // The workspace is a folder inside a temporary folder of this test's own, so what lies "outside
  // the workspace" (the parent) is ours too, never a shared path such as /tmp/x.
  root = path.join(realpathSync(mkdtempSync(path.join(tmpdir(), 'cs-run-'))), 'workspace');
  mkdirSync(path.join(root, 'repo'), { recursive: true });
  tool = createRunCommandTool(root, unconfinedSandbox());
});

describe('run_command', () => {
  it('always asks a person, at high risk, and is never replayed after a crash', () => {
    expect(needsApproval(tool, { command: ['ls'] })).toBe(true);
    expect(riskOf(tool, { command: ['ls'] })).toBe('high');
    expect(tool.idempotent).toBe(false);
  });

  it('may run for its own timeout plus the kill grace before the loop abandons it, never less than the default', () => {
    const limit = (args: Record<string, unknown>) => timeLimitOf(tool, tool.input.parse(args), 120);
    expect(limit({ command: ['make'], timeoutSeconds: 600 })).toBe(600 + RUN_COMMAND_LIMITS.killGraceSeconds);
    expect(limit({ command: ['make'], timeoutSeconds: 60 })).toBe(120);
  });

  it('shows the exact argv shell-quoted, the working directory and the risk on the approval card', async () => {
    expect(
      await tool.describeForApproval!(
        // Raw, as the approval service passes them: no timeoutSeconds yet.
        { command: ['git', 'commit', '-m', "it's done", '--author=', ''], cwd: './repo/' } as never,
        testToolContext(),
      ),
    ).toBe(
      `$ git commit -m 'it'\\''s done' --author= ''\nin: repo\ntimeout: 60 s · no shell · risk: high\nsandbox: OFF (SANDBOX=off) — it runs as the bot, and can read its secrets`,
    );
  });

  it('runs the program once, without a shell, in the workspace with a minimal environment', async () => {
    const result = await run({
      command: ['sh', '-c', 'echo "$HOME|$LANG|$SECRET"; pwd; echo ran >> runs.log', 'ignored'],
      cwd: 'repo',
    });
    // HOME is an empty folder of its own, never the workspace (a written .gitconfig must not apply).
    const home = /stdout:\n(.*)\|C\.UTF-8\|/.exec(result.content)?.[1] ?? '';
    expect(home).toMatch(/countersign-home-/);
    expect(home.startsWith(root)).toBe(false);
    expect(existsSync(home)).toBe(false);
    expect(result).toEqual({
      content: `$ sh -c 'echo "$HOME|$LANG|$SECRET"; pwd; echo ran >> runs.log' ignored  (in repo)\nexit code 0\nstdout:\n${home}|C.UTF-8|\n${root}/repo\nstderr: (empty)`,
      isError: false,
    });
    expect(readFileSync(path.join(root, 'repo/runs.log'), 'utf8')).toBe('ran\n');
    const literal = await run({ command: ['echo', '$HOME', ';', 'rm', '-rf', '*'] });
    expect(literal.content).toContain('stdout:\n$HOME ; rm -rf *\n');
  });

  it('reports a non-zero exit code as an error, with stderr', async () => {
    const result = await run({ command: ['sh', '-c', 'echo oops >&2; exit 3'] });
    expect(result.isError).toBe(true);
    expect(result.content).toContain('\nexit code 3\n');
    expect(result.content).toContain('stderr:\noops');
  });

  it('keeps the first 64 KiB of each stream and says how much it dropped', async () => {
    const result = await run({
      command: ['sh', '-c', 'head -c 200000 /dev/zero | tr "\\0" x; head -c 70000 /dev/zero | tr "\\0" y >&2'],
    });
    expect(result.content).toContain(
      `\nstdout:\n${'x'.repeat(RUN_COMMAND_LIMITS.outputBytes)}\n[stdout truncated: kept the first 65536 bytes, dropped 134464]`,
    );
    expect(result.content).toContain('[stderr truncated: kept the first 65536 bytes, dropped 4464]');
    expect(result.content.length).toBeLessThan(2 * RUN_COMMAND_LIMITS.outputBytes + 1000);
  });

  it('kills the whole process group when the timeout passes', async () => {
    const result = await run({ command: ['sh', '-c', 'sleep 30 & echo $! > child.pid; wait'], timeoutSeconds: 1 });
    expect(result.isError).toBe(true);
    expect(result.content).toContain('killed: timed out after 1 s');
    const child = Number(readFileSync(path.join(root, 'child.pid'), 'utf8'));
    await expect.poll(() => alive(child), { timeout: 10_000 }).toBe(false);
  });

  it('kills the program when the turn is stopped', async () => {
    const controller = new AbortController();
    const pending = run(
      { command: ['sh', '-c', 'echo started > started; sleep 30'] },
      testToolContext({ signal: controller.signal }),
    );
    await expect
      .poll(
        () => {
          try {
            return readFileSync(path.join(root, 'started'), 'utf8');
          } catch {
            return '';
          }
        },
        { timeout: 10_000 },
      )
      .toBe('started\n');
    controller.abort();
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(result.content).toContain('killed: the turn was stopped');
  });

  it('kills the program when the stop lands after the last check and before the program starts', async () => {
    const controller = new AbortController();
    let checks = 0;
    // The stop arrives just after the tool's check read "not stopped" (while it prepares HOME):
    // the abort event has fired by the time the program is spawned.
    const signal = new Proxy(controller.signal, {
      get(target, property) {
        if (property === 'aborted' && (checks += 1) === 1) {
          queueMicrotask(() => controller.abort());
          return false;
        }
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const startedAt = Date.now();
    const result = await run({ command: ['sleep', '20'] }, testToolContext({ signal }));
    expect(result.content).toContain('killed: the turn was stopped');
    expect(Date.now() - startedAt).toBeLessThan(15_000);
  });

  it('does not start at all when the turn was already stopped', async () => {
    const controller = new AbortController();
    controller.abort();
    expect(await run({ command: ['touch', 'made'] }, testToolContext({ signal: controller.signal }))).toEqual({
      content: 'Not run: the turn was stopped.',
      isError: true,
    });
    expect(() => readFileSync(path.join(root, 'made'))).toThrow();
  });

  it('says when the program does not exist', async () => {
    expect(await run({ command: ['no-such-program-xyz'] })).toEqual({
      content: 'Could not start no-such-program-xyz: no such program on PATH.',
      isError: true,
    });
  });

  it('refuses a working directory outside the workspace', async () => {
    // Something to see beside the workspace, in this test's own temporary folder.
    writeFileSync(path.join(root, '..', 'x'), '', { flag: 'a' });
    expect(await run({ command: ['ls'], cwd: '../' })).toEqual({
      content: 'Paths may not contain "..".',
      isError: true,
    });
  });
});

describe('run_command prompt note', () => {
  it('tells the model running programs is off, and says nothing when it is on', () => {
    expect(runCommandPromptNote(false)).toMatch(/^Running programs is switched off in this deployment/);
    expect(runCommandPromptNote(true)).toBe('');
  });
});

describe('shell quoting', () => {
  it.each([
    ['plain', 'plain'],
    ['', "''"],
    ['two words', "'two words'"],
    ["it's", "'it'\\''s'"],
    ['$HOME', "'$HOME'"],
    ['a;b', "'a;b'"],
  ])('quotes %j as %s', (arg, quoted) => {
    expect(shellQuote(arg)).toBe(quoted);
  });
});
