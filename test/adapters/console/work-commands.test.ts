import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { runCli } from '../../helpers/processes.ts';
import { makeRepo } from '../../repos/git-fixture.ts';
import { consoleCommands } from '../../../src/adapters/console/work-commands.ts';
import { SkillRegistry } from '../../../src/skills/index.ts';
import { Priority } from '../../../src/core/work-item.ts';
import type { WorkCommandResult } from '../../../src/core/work-commands.ts';

const ME = { platform: 'console', userId: 'me', workspace: 'local' };

describe('the console’s work commands, line by line', () => {
  const asked: Array<[string, string]> = [];
  const commands = consoleCommands({
    skills: new SkillRegistry({}),
    workCommand: (name, text): WorkCommandResult => {
      asked.push([name, text]);
      return text.startsWith('nosuch')
        ? { ok: false, message: 'No repository "nosuch". Known: api' }
        : { ok: true, header: 'h', type: 'CODE', priority: Priority.NORMAL, prompt: 'do it', payload: { repo: 'api' } };
    },
    workStatus: async (person) => `status of ${person.userId}`,
  });

  it('turns /code into the line’s work item, with the core’s type, priority, prompt and payload', async () => {
    expect(await commands('/code api do it', ME)).toEqual({
      draft: { type: 'CODE', priority: Priority.NORMAL, input: { prompt: 'do it' }, payload: { repo: 'api' } },
    });
    expect(asked.at(-1)).toEqual(['code', 'api do it']);
  });

  it('prints what the core could not read, and /status for the person typing', async () => {
    expect(await commands('/review nosuch main', ME)).toEqual({ reply: 'No repository "nosuch". Known: api' });
    expect(await commands('/status', ME)).toEqual({ reply: 'status of me' });
  });

  it('leaves other lines, and words that only start like a command, to the agent', async () => {
    const before = asked.length;
    expect(await commands('/codex api', ME)).toBeUndefined();
    expect(await commands('please /code api', ME)).toBeUndefined();
    expect(await commands('/statusx', ME)).toBeUndefined();
    expect(asked).toHaveLength(before);
  });
});

describe('/code, /research and /status in the console with piped stdin', () => {
  let db: TestDatabase;
  let dir: string;
  let clone: string;
  beforeAll(async () => {
    db = await createTestDatabase();
    ({ dir, clone } = makeRepo());
  });
  afterAll(async () => {
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers an unknown repository with the known ones, runs /research at LOW, and prints /status', async () => {
    const script = path.join(mkdtempSync(path.join(dir, 'script-')), 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        rules: [
          { match: 'Research this', rounds: [{ text: 'Research done.' }] },
          { rounds: [{ text: 'echo: {{lastUser}}' }] },
        ],
      }),
    );
    const run = runCli(
      ['start'],
      {
        DATABASE_URL: db.url,
        AI_PROVIDER: 'scripted',
        SCRIPTED_MODEL_SCRIPT: script,
        HTTP_PORT: '0',
        HTTP_HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        AGENT_WORKSPACE_ROOT: path.join(dir, 'workspace'),
        REPOS: `api=${clone}`,
        WORKTREES_DIR: path.join(dir, 'worktrees'),
      },
      '/code nosuch add a file\n/research how queues stay fair\n/status\n',
    );
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    const lines = run.stdout().trimEnd().split('\n');
    expect(lines[0]).toContain('api');
    expect(lines[0]).not.toContain('echo:');
    expect(lines).toContain('Research done.');
    // Asked after the research finished: the console's own answer, not a chat turn.
    expect(lines.at(-1)).toBe('You have no running or queued work.');

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ type: string; priority: number; conversation_id: string }>(
        `SELECT type, priority, conversation_id FROM countersign.work_items ORDER BY seq`,
      );
      // Only the research became work, in the console's own conversation.
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ type: 'RESEARCH', priority: Priority.LOW });
      expect(rows[0]!.conversation_id).toMatch(/^console:/);
    } finally {
      await client.end();
    }
  });
});

describe('/code in the console: the change card, its full diff, and the merge', () => {
  let db: TestDatabase;
  let dir: string;
  let clone: string;
  beforeAll(async () => {
    db = await createTestDatabase();
    ({ dir, clone } = makeRepo());
  });
  afterAll(async () => {
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints the card with its words, prints the diff on `diff`, and merges on `y`', async () => {
    const script = path.join(mkdtempSync(path.join(dir, 'script-')), 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        rules: [
          {
            match: '^add a greeting',
            rounds: [
              { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hello from the console\n' } }] },
              { text: 'Add a greeting' },
              { text: 'Result: {{lastToolResult}}' },
            ],
          },
        ],
      }),
    );
    const run = runCli(
      ['start'],
      {
        DATABASE_URL: db.url,
        AI_PROVIDER: 'scripted',
        SCRIPTED_MODEL_SCRIPT: script,
        HTTP_PORT: '0',
        HTTP_HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        AGENT_WORKSPACE_ROOT: path.join(dir, 'workspace'),
        REPOS: `api=${clone}`,
        WORKTREES_DIR: path.join(dir, 'worktrees'),
      },
      // Approve the write, ask for the diff, then merge (no approvers: the operator's click is enough).
      '/code api add a greeting\ny\ndiff\ny\n',
    );
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    const out = run.stdout();
    expect(out).toContain('Merge into main');
    // The shared file, printed whole: its name, and the change's diff in it.
    const file = out.slice(out.search(/api-[0-9a-f]{12}\.diff/));
    expect(file).toContain('+hello from the console');
    expect(out).toMatch(/Merged [0-9a-f]{12} into main/);
    const { execFileSync } = await import('node:child_process');
    const shown = execFileSync('git', ['show', 'main:hello.txt'], {
      cwd: clone,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
    });
    expect(shown).toBe('hello from the console\n');
  });
});
