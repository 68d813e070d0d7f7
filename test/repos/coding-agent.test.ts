import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CODING_AGENT_WITHHELD } from '../../src/config.ts';
import {
  parseCodingAgentCommand,
  progressOfLine,
  runCodingAgent,
  type CodingAgentOptions,
} from '../../src/repos/coding-agent.ts';
import { unconfinedSandbox } from '../helpers/sandbox.ts';

const FAKE = path.resolve(import.meta.dirname, '../fakes/coding-cli.mjs');

/** A throw-away git repository standing in for a conversation's worktree. */
function makeWorktree(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'cs-coding-agent-'));
  execFileSync('git', ['init', '-q', '-b', 'main'], {
    cwd: dir,
    env: { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
  });
  return dir;
}

/** Runs the fake CLI with `args` in a fresh worktree, collecting progress. */
async function runFake(args: string[], options: Partial<CodingAgentOptions> = {}) {
  const cwd = options.cwd ?? makeWorktree();
  const progress: string[] = [];
  const result = await runCodingAgent({
    argv: [process.execPath, FAKE, ...args],
    cwd,
    task: 'write notes.txt: hello',
    signal: new AbortController().signal,
    onProgress: (markdown) => progress.push(markdown),
    withheld: CODING_AGENT_WITHHELD,
    passed: ['ANTHROPIC_API_KEY', 'FAKE_CODING_KEPT'],
    sandbox: unconfinedSandbox(),
    ...options,
  });
  return { result, progress, cwd };
}

/** Alive and not a zombie waiting for its parent to reap it. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

async function waitFor(condition: () => boolean, ms = 5_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return condition();
}

const leftovers: number[] = [];
afterEach(() => {
  for (const pid of leftovers.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  }
});

/** Starts the fake in hang mode; resolves with its grandchild's pid once that has started. */
async function hangingRun(extra: string[], options: Partial<CodingAgentOptions> = {}) {
  const cwd = makeWorktree();
  const pidFile = path.join(cwd, 'grandchild.pid');
  const running = runFake(['--mode=hang', `--pid-file=${pidFile}`, ...extra, '{task}'], { cwd, ...options });
  expect(await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '')).toBe(true);
  const grandchild = Number(readFileSync(pidFile, 'utf8'));
  leftovers.push(grandchild);
  expect(alive(grandchild)).toBe(true);
  return { running, grandchild };
}

describe('runCodingAgent', () => {
  it('runs a stream-json CLI in the worktree: markdown progress, never JSON, and its result as the summary', async () => {
    const { result, progress, cwd } = await runFake(['--mode=stream-json', '{task}']);
    expect(readFileSync(path.join(cwd, 'notes.txt'), 'utf8')).toBe('hello\n');
    expect(result).toEqual({
      summary: 'Wrote notes.txt as asked.',
      spent: {},
      exitCode: 0,
      stopped: false,
      timedOut: false,
    });
    expect(progress).toEqual(['Reading the task.', 'Writing the file.\n• Write `notes.txt`\n• Bash `echo ˋdateˋ`']);
    for (const markdown of progress) expect(markdown).not.toMatch(/^\s*[{[]|"type"/m);
  });

  it('runs a plain-text CLI, the task on stdin, and sums up with its last lines', async () => {
    const { result, progress, cwd } = await runFake(['--mode=plain']);
    expect(progress).toEqual(['task from stdin: write notes.txt: hello', 'wrote notes.txt', 'done']);
    expect(readFileSync(path.join(cwd, 'notes.txt'), 'utf8')).toBe('hello\n');
    expect(result.summary).toBe(progress.join('\n'));
    expect(result.exitCode).toBe(0);
  });

  it('puts the task in every argument that contains {task}, verbatim, and then not on stdin', async () => {
    const task = 'write a.txt: $& and $1 stay';
    const { progress, cwd } = await runFake(['--mode=plain', 'Task: {task}'], { task });
    expect(progress[0]).toBe(`task from argv: Task: ${task}`);
    expect(existsSync(path.join(cwd, 'a.txt'))).toBe(false);
    const direct = await runFake(['--mode=plain', '{task}'], { task });
    expect(direct.progress[0]).toBe(`task from argv: ${task}`);
    expect(readFileSync(path.join(direct.cwd, 'a.txt'), 'utf8')).toBe('$& and $1 stay\n');
  });

  it('reads what a stream-json run reported it spent: total_cost_usd, and every kind of token', async () => {
    const { result } = await runFake(['--mode=stream-json', '--cost=0.4213', '--usage=100/50/1000/10', '{task}']);
    expect(result.spent).toEqual({ usd: 0.4213, tokens: 1160 });
    // modelUsage also counts subagents' requests: the larger count is taken.
    const more = await runFake(['--usage=100/50/1000/10', '--model-usage=200/80/3000/20', '{task}']);
    expect(more.result.spent).toEqual({ tokens: 3300 });
    const fewer = await runFake(['--usage=100/50/1000/10', '--model-usage=1/1/1/1', '{task}']);
    expect(fewer.result.spent).toEqual({ tokens: 1160 });
  });

  it('counts a reported cost that is not a number as not reported', async () => {
    const { result } = await runFake(['--mode=stream-json', '--cost=abc', '{task}']);
    // JSON.stringify(NaN) is null: a result with "total_cost_usd": null.
    expect(result.spent).toEqual({});
  });

  it('counts token counts that are not numbers as not reported, never as zero tokens', async () => {
    // A CLI whose `usage` does not carry the documented counts (null here, or other names) said nothing.
    const { result } = await runFake(['--mode=stream-json', '--cost=0.5', '--usage=abc', '{task}']);
    expect(result.spent).toEqual({ usd: 0.5 });
    const perModel = await runFake(['--mode=stream-json', '--model-usage=abc', '{task}']);
    expect(perModel.result.spent).toEqual({});
  });

  it('puts the dollars the run is held at in every argument that contains {budget_usd}', async () => {
    const { progress } = await runFake(['--mode=plain', 'cap {budget_usd} for {task}'], { budgetUsd: 2.5 });
    expect(progress[0]).toBe('task from argv: cap 2.5 for write notes.txt: hello');
  });

  it('on stop kills the whole process group, grandchildren too', async () => {
    const stop = new AbortController();
    const { running, grandchild } = await hangingRun([], { signal: stop.signal });
    stop.abort();
    const { result, progress } = await running;
    expect(result).toMatchObject({ exitCode: null, stopped: true, timedOut: false });
    // It reported nothing: what it spent is not known (its budget hold is spent whole).
    expect(result.spent).toEqual({});
    expect(result.summary).toMatch(/^The coding agent was stopped\./);
    expect(progress).toEqual(['working on it']);
    expect(await waitFor(() => !alive(grandchild))).toBe(true);
  });

  it('on stop sends SIGKILL after the grace when the agent ignores SIGTERM', async () => {
    const stop = new AbortController();
    const { running, grandchild } = await hangingRun(['--ignore-term'], { signal: stop.signal });
    const started = Date.now();
    stop.abort();
    const { result } = await running;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    expect(result).toMatchObject({ exitCode: null, stopped: true });
    expect(await waitFor(() => !alive(grandchild))).toBe(true);
  });

  it('kills an agent that runs past its time limit and says so', async () => {
    const { running, grandchild } = await hangingRun([], { timeoutMs: 1_000 });
    const { result } = await running;
    expect(result).toMatchObject({ exitCode: null, stopped: false, timedOut: true });
    expect(result.summary).toMatch(/ran past its time limit \(1 s\)/);
    expect(await waitFor(() => !alive(grandchild))).toBe(true);
  });

  it('reports a failed run with its exit code and the last lines of stderr', async () => {
    const { result } = await runFake(['--mode=fail', '{task}']);
    expect(result.exitCode).toBe(3);
    expect(result.summary).toMatch(/^The coding agent failed with exit code 3\./);
    expect(result.summary).toContain('warning: nothing serious\nerror: something broke');
    expect(result.summary).toContain('starting');
  });

  it('says so when the program cannot be started', async () => {
    const result = await runCodingAgent({
      withheld: CODING_AGENT_WITHHELD,
      passed: [],
      sandbox: unconfinedSandbox(),
      argv: ['/nonexistent/coding-cli'],
      cwd: makeWorktree(),
      task: 't',
      signal: new AbortController().signal,
      onProgress: () => undefined,
    });
    expect(result.summary).toMatch(/could not be started \(\/nonexistent\/coding-cli: no such program\)/);
    expect(result.exitCode).toBeNull();
    // Nothing ran, so nothing was spent.
    expect(result.spent).toEqual({ usd: 0, tokens: 0 });
  });

  it('starts nothing when already stopped', async () => {
    const stop = new AbortController();
    stop.abort();
    const { result, cwd } = await runFake(['--mode=plain', '{task}'], { signal: stop.signal });
    expect(result).toMatchObject({ stopped: true, exitCode: null });
    expect(existsSync(path.join(cwd, 'notes.txt'))).toBe(false);
  });

  it("keeps the bot's secrets out of the agent's environment, and the rest in", async () => {
    const secrets = {
      SLACK_BOT_TOKEN: 'xoxb-secret',
      DISCORD_TOKEN: 'discord-secret',
      DATABASE_URL: 'postgres://secret',
      METRICS_TOKEN: 'metrics-secret',
      SLACK_SIGNING_SECRET: 'signing-secret',
    };
    const kept = { ANTHROPIC_API_KEY: 'sk-ant-for-the-cli', FAKE_CODING_KEPT: '1' };
    const saved = { ...process.env };
    Object.assign(process.env, secrets, kept);
    let fromProcess: string[];
    try {
      fromProcess = (await runFake(['--mode=env', '{task}'])).progress;
    } finally {
      for (const name of Object.keys({ ...secrets, ...kept })) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
    const expected = [
      ...Object.keys(secrets).map((name) => `${name}: unset`),
      ...Object.keys(kept).map((name) => `${name}: set`),
    ];
    expect(fromProcess).toEqual(expected);
    // A given environment is cleaned the same way.
    const given = await runFake(['--mode=env', '{task}'], { env: { PATH: process.env.PATH, ...secrets, ...kept } });
    expect(given.progress).toEqual(expected);
  });
});

describe('progressOfLine', () => {
  const assistant = (content: unknown[]) => JSON.stringify({ type: 'assistant', message: { content } });

  it('shows nothing for system, user, result, unknown or cut JSON lines, nor blank ones', () => {
    for (const line of [
      JSON.stringify({ type: 'system', subtype: 'init' }),
      JSON.stringify({ type: 'user', message: { content: [{ type: 'tool_result', content: 'x' }] } }),
      JSON.stringify({ type: 'result', result: 'done', is_error: false }),
      JSON.stringify({ type: 'progress', step: 1 }),
      '{"type":"assistant","message":{"content":[{"type":"text","text":"cut',
      '[1, 2]',
      '   ',
      assistant([{ type: 'thinking', thinking: 'hmm' }]),
    ]) {
      expect(progressOfLine(line)).toBeUndefined();
    }
  });

  it('shows assistant text and one short line per tool call', () => {
    expect(
      progressOfLine(
        assistant([
          { type: 'text', text: '  Fixing the bug.  ' },
          { type: 'tool_use', name: 'Edit', input: { file_path: 'src/a.ts', old_string: 'a', new_string: 'b' } },
          { type: 'tool_use', name: 'Grep', input: { pattern: 'TODO' } },
          { type: 'tool_use', name: 'TodoWrite', input: { todos: [] } },
        ]),
      ),
    ).toBe('Fixing the bug.\n• Edit `src/a.ts`\n• Grep `TODO`\n• TodoWrite');
  });

  it('keeps a tool call on one capped line with no backtick that could close its code span', () => {
    const shown = progressOfLine(
      assistant([{ type: 'tool_use', name: 'Bash', input: { command: `echo \`id\`\n${'x'.repeat(300)}` } }]),
    )!;
    expect(shown).not.toContain('\n');
    expect(shown.length).toBeLessThan(100);
    expect(shown).toMatch(/^• Bash `echo ˋidˋ x+…`$/);
  });

  it('shows plain lines trimmed, without colours, as the terminal would after carriage returns', () => {
    expect(progressOfLine('  \u001b[1mBuilding\u001b[0m  ')).toBe('Building');
    expect(progressOfLine('10%\r50%\r100%\r\n')).toBe('100%');
    expect(progressOfLine('[INFO] reading files')).toBe('[INFO] reading files');
    expect(progressOfLine('y'.repeat(5_000))!.length).toBeLessThanOrEqual(1_500);
  });
});

describe('parseCodingAgentCommand', () => {
  it('reads a JSON array of strings, keeping spaces inside elements', () => {
    expect(parseCodingAgentCommand(' ["claude", "-p", "do {task} now", "--output-format", "stream-json"] ')).toEqual([
      'claude',
      '-p',
      'do {task} now',
      '--output-format',
      'stream-json',
    ]);
  });

  it('splits a plain string on whitespace, with no shell quoting', () => {
    expect(parseCodingAgentCommand('codex  exec\t"-"\n')).toEqual(['codex', 'exec', '"-"']);
  });

  it('refuses bad input with a readable message', () => {
    expect(() => parseCodingAgentCommand('  ')).toThrow(/CODING_AGENT_COMMAND is empty/);
    expect(() => parseCodingAgentCommand('["claude", ')).toThrow(/not valid JSON/);
    expect(() => parseCodingAgentCommand('[]')).toThrow(/JSON array of non-empty strings \(the array is empty\)/);
    expect(() => parseCodingAgentCommand('["claude", 1]')).toThrow(/JSON array of non-empty strings/);
    expect(() => parseCodingAgentCommand('["", "x"]')).toThrow(/an element is empty/);
  });
});
