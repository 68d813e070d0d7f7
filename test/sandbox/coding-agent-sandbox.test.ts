import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODING_AGENT_WITHHELD } from '../../src/config.ts';
import { runCodingAgent } from '../../src/repos/coding-agent.ts';
import { ProgramSandbox } from '../../src/sandbox/sandbox.ts';
import {
  BOT_SECRETS,
  fetchScript,
  leaked,
  loopbackServer,
  makeDeployment,
  startEnvironment,
  withBotSecrets,
  type Deployment,
} from './fixture.ts';

const FAKE_CLI = path.resolve(import.meta.dirname, '../fakes/coding-cli.mjs');
const GIT_ENV = { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

let deployment: Deployment;
let restoreEnv: () => void;
let clone: string;
let worktree: string;
let otherWorktree: string;
/** Where the fake CLI is installed: outside the checkout, granted as SANDBOX_READ_PATHS would. */
let tools: string;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@localhost', ...args], {
    cwd,
    env: GIT_ENV,
    encoding: 'utf8',
  }).trim();

beforeAll(() => {
  deployment = makeDeployment();
  restoreEnv = withBotSecrets();
  clone = path.join(deployment.dir, 'clone');
  mkdirSync(clone);
  git(clone, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(clone, 'README'), 'hello\n');
  git(clone, 'add', '-A');
  git(clone, 'commit', '-q', '-m', 'first commit');
  // As src/repos/worktrees.ts lays them out: under the bot's data folder, one per conversation.
  const worktrees = path.join(deployment.app, '.data', 'worktrees', 'demo');
  worktree = path.join(worktrees, 'C-own');
  otherWorktree = path.join(worktrees, 'C-other');
  git(clone, 'worktree', 'add', '-q', '-b', 'own', worktree);
  git(clone, 'worktree', 'add', '-q', '-b', 'other', otherWorktree);
  writeFileSync(path.join(otherWorktree, 'uncommitted.txt'), 'work in another conversation\n');
  tools = path.join(deployment.dir, 'tools');
  mkdirSync(tools);
  copyFileSync(FAKE_CLI, path.join(tools, 'coding-cli.mjs'));
});
afterAll(() => {
  restoreEnv();
  deployment.cleanup();
});

async function runAgent(sandbox: ProgramSandbox, argv: string[], task = 'the task') {
  const progress: string[] = [];
  const result = await runCodingAgent({
    argv,
    cwd: worktree,
    task,
    signal: new AbortController().signal,
    onProgress: (markdown) => progress.push(markdown),
    env: { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-for-the-cli' },
    // DATABASE_URL is named on purpose: a withheld secret is never passed, whoever names it.
    passed: ['ANTHROPIC_API_KEY', 'DATABASE_URL'],
    withheld: CODING_AGENT_WITHHELD,
    sandbox,
  });
  return { result, shown: progress.join('\n') };
}

describe('the coding CLI (CODING_AGENT_COMMAND) in the sandbox', () => {
  it("sees none of the bot's environment, files or other worktrees, and only its model key", async () => {
    const sandbox = await deployment.sandbox([], [tools]);
    const { shown } = await runAgent(sandbox, [
      'sh',
      '-c',
      [
        'cat /proc/$PPID/environ | tr "\\0" "\\n"',
        'env',
        'cat ../../../.env',
        `cat ${deployment.app}/.env`,
        `cat ${otherWorktree}/uncommitted.txt`,
        'ls ..',
        'echo "listed"',
      ].join('; '),
    ]);
    expect(leaked(shown)).toEqual([]);
    expect(startEnvironment().filter((entry) => shown.includes(entry))).toEqual([]);
    for (const name of Object.keys(BOT_SECRETS)) expect(shown).not.toContain(`${name}=`);
    expect(shown).not.toContain('work in another conversation');
    expect(shown).not.toContain('C-other');
    expect(shown).toContain('ANTHROPIC_API_KEY=sk-ant-for-the-cli');
    expect(shown).toContain('listed');
  });

  it('works in its worktree, reads its history, and moves no ref of the clone', async () => {
    const sandbox = await deployment.sandbox([], [tools]);
    const before = git(clone, 'rev-parse', 'main');
    const { result } = await runAgent(
      sandbox,
      [process.execPath, path.join(tools, 'coding-cli.mjs'), '--mode=stream-json', '--git-commit', '{task}'],
      'write notes.txt: from the sandboxed cli',
    );
    expect(result.exitCode).toBe(0);
    expect(readFileSync(path.join(worktree, 'notes.txt'), 'utf8')).toBe('from the sandboxed cli\n');
    // git's folders are read-only inside: its commit failed, and no branch moved.
    expect(git(clone, 'rev-parse', 'main')).toBe(before);
    expect(git(clone, 'rev-parse', 'own')).toBe(before);
    const history = await runAgent(sandbox, ['git', 'log', '--format=%s']);
    expect(history.shown).toContain('first commit');
    const moved = await runAgent(sandbox, ['git', 'update-ref', 'refs/heads/main', 'HEAD']);
    expect(moved.result.exitCode).not.toBe(0);
    expect(git(clone, 'rev-parse', 'main')).toBe(before);
  });

  it("reads no credential from the clone's git config (a push token in its remote's URL), and git still works", async () => {
    git(clone, 'remote', 'add', 'origin', 'https://x-access-token:ghp_sandboxpushtoken0123456789@example.com/r.git');
    git(clone, 'config', 'http.extraHeader', 'Authorization: Bearer sandbox-header-secret');
    try {
      const sandbox = await deployment.sandbox([], [tools]);
      const { shown } = await runAgent(sandbox, [
        'sh',
        '-c',
        'cat "$(git rev-parse --git-common-dir)/config"; git config --list; git remote -v; git log --format=%s',
      ]);
      expect(shown).not.toContain('ghp_sandboxpushtoken');
      expect(shown).not.toContain('sandbox-header-secret');
      expect(shown).toContain('first commit');
    } finally {
      git(clone, 'remote', 'remove', 'origin');
      git(clone, 'config', '--unset', 'http.extraHeader');
    }
  });

  it('writes nothing outside its worktree', async () => {
    const sandbox = await deployment.sandbox();
    await runAgent(sandbox, [
      'sh',
      '-c',
      `echo x > ../escaped.txt; echo x > ${otherWorktree}/planted.txt; echo x > ${clone}/.git/hooks/post-commit`,
    ]);
    expect(existsSync(path.join(worktree, '..', 'escaped.txt'))).toBe(false);
    expect(existsSync(path.join(otherWorktree, 'planted.txt'))).toBe(false);
    expect(existsSync(path.join(clone, '.git', 'hooks', 'post-commit'))).toBe(false);
  });

  it('reaches no loopback server unless SANDBOX_NETWORK allows coding_agent', async () => {
    const server = await loopbackServer();
    try {
      const off = await runAgent(await deployment.sandbox(), [process.execPath, '-e', fetchScript(server.url)]);
      expect(off.shown).toContain('FAILED');
      expect(server.hits()).toBe(0);
      const on = await runAgent(await deployment.sandbox(['coding_agent']), [
        process.execPath,
        '-e',
        fetchScript(server.url),
      ]);
      expect(on.shown).toContain('BODY reached the loopback server');
      expect(server.hits()).toBe(1);
    } finally {
      await server.close();
    }
  });

  it('is not started where no sandbox can run, and says how to go on', async () => {
    const none = new ProgramSandbox(
      { kind: 'unavailable', reason: 'a trial run of bwrap failed' },
      {
        granted: [],
        protected: [],
      },
    );
    const { result } = await runAgent(none, ['sh', '-c', 'echo ran > ran.txt']);
    expect(result.summary).toContain('not started');
    expect(result.summary).toContain('SANDBOX=off');
    expect(result.spent).toEqual({ usd: 0, tokens: 0 });
    expect(existsSync(path.join(worktree, 'ran.txt'))).toBe(false);
  });
});
