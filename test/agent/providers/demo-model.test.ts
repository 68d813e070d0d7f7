import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_SCRIPT, parseScript, planRound } from '../../../src/agent/providers/scripted.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { runCli } from '../../helpers/processes.ts';

/** The first round the offline demo model plays for `text`, offered these tools. */
const firstRound = (text: string, tools: string[] = ['write_file']) =>
  planRound(parseScript(DEMO_SCRIPT), [{ role: 'user', text }], tools);

const argsOf = (round: ReturnType<typeof firstRound>) => round.toolCalls.map((c) => JSON.parse(c.json) as unknown);

describe('the offline demo model', () => {
  it.each([
    ['write notes.txt: hi', { path: 'notes.txt', content: 'hi\n' }],
    ['Write todo.md:buy milk', { path: 'todo.md', content: 'buy milk\n' }],
    ['create a file notes/plan.txt with ship it on Friday', { path: 'notes/plan.txt', content: 'ship it on Friday\n' }],
    ['please create a new file called a.txt containing the text x y', { path: 'a.txt', content: 'x y\n' }],
  ])('asks to write a file for "%s"', (text, args) => {
    const round = firstRound(text);
    expect(round.toolCalls.map((c) => c.name)).toEqual(['write_file']);
    expect(argsOf(round)).toEqual([args]);
  });

  it('asks to run a command, as an argv, when run_command is offered', () => {
    const round = firstRound('run git log -n 3', ['write_file', 'run_command']);
    expect(round.toolCalls.map((c) => c.name)).toEqual(['run_command']);
    expect(argsOf(round)).toEqual([{ command: ['git', 'log', '-n', '3'] }]);
  });

  it('says how to switch running commands on when run_command is not offered', () => {
    const round = firstRound('run git status');
    expect(round.toolCalls).toEqual([]);
    expect(round.text).toContain('`git status`');
    expect(round.text).toContain('ENABLE_RUN_COMMAND=true');
  });

  it('points a newcomer at what to try when it can only echo', () => {
    expect(firstRound('hello').text).toContain('"write notes.txt: hi"');
  });
});

describe('the demo model in the console, with no model key', () => {
  let db: TestDatabase;
  let dir: string;
  const env = (workspace: string, extra: Record<string, string> = {}) => ({
    DATABASE_URL: db.url,
    AGENT_WORKSPACE_ROOT: path.join(dir, workspace),
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    ...extra,
  });
  beforeAll(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(path.join(tmpdir(), 'cs-demo-model-'));
  });
  afterAll(async () => {
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows a card for "write notes.txt: hi", writes the file on y, and says so', async () => {
    const run = runCli(['start'], env('write'), 'write notes.txt: hi\ny\n');
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    const out = run.stdout();
    expect(out).toContain('**Approval needed**');
    expect(out).toContain('`write_file`');
    expect(out.trimEnd().split('\n').at(-1)).toBe('Result: Wrote 3 bytes to notes.txt.');
    expect(readFileSync(path.join(dir, 'write', 'notes.txt'), 'utf8')).toBe('hi\n');
  });

  it('writes nothing when the card is answered n', async () => {
    const run = runCli(['start'], env('declined'), 'create a file notes.txt with hi\nn\n');
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    expect(run.stdout()).toContain('**Approval needed**');
    expect(existsSync(path.join(dir, 'declined', 'notes.txt'))).toBe(false);
  });

  it('shows a card for "run echo hello" when ENABLE_RUN_COMMAND=true, and runs it on y', async () => {
    const run = runCli(['start'], env('run', { ENABLE_RUN_COMMAND: 'true' }), 'run echo hello\ny\n');
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    const out = run.stdout();
    expect(out).toContain('**Approval needed**');
    expect(out).toContain('$ echo hello');
    expect(out).toMatch(/exit code 0\nstdout:\nhello\n/);
  });
});
