import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { runCli } from '../../helpers/processes.ts';

describe('the console commands', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  async function pipe(input: string) {
    const run = runCli(
      ['start'],
      { DATABASE_URL: db.url, AI_PROVIDER: 'scripted', HTTP_PORT: '0', HTTP_HOST: '127.0.0.1', LOG_LEVEL: 'silent' },
      input,
    );
    const { code } = await run.exited;
    return { code, out: run.stdout(), err: run.stderr() };
  }

  async function prompts(): Promise<Array<{ prompt: string; conversation_id: string }>> {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ prompt: string; conversation_id: string }>(
        `SELECT item->'input'->>'prompt' AS prompt, conversation_id FROM countersign.work_items ORDER BY seq`,
      );
      return rows;
    } finally {
      await client.end();
    }
  }

  it('/new starts a new conversation: the next line is asked in another one', async () => {
    const run = await pipe('first question\n/new\nsecond question\n');
    expect(run.code, run.err).toBe(0);
    expect(run.out).toContain('Started a new conversation');
    const rows = (await prompts()).filter((r) => r.prompt.endsWith('question'));
    expect(rows.map((r) => r.prompt)).toEqual(['first question', 'second question']);
    expect(rows[0]!.conversation_id).not.toBe(rows[1]!.conversation_id);
  });

  it('/help lists the console commands, and goes to no model', async () => {
    const before = (await prompts()).length;
    const run = await pipe('/help\n');
    expect(run.code, run.err).toBe(0);
    for (const command of ['/new', '/status', '/grants', '/budget', '/schedules', '/connections', '/code', '/attach'])
      expect(run.out).toContain(command);
    expect(await prompts()).toHaveLength(before);
  });

  it('/grants with none says how the console makes and revokes one, and names no button', async () => {
    const run = await pipe('/grants\n');
    expect(run.code, run.err).toBe(0);
    expect(run.out).toContain('No standing grants apply here.');
    expect(run.out).toMatch(/\ba\b.*approval card/);
    expect(run.out).toContain('/grants revoke ID');
    expect(run.out).not.toMatch(/button/i);
  });

  it.each([
    ['/countersign status', /work/i],
    ['/countersign grants', /grant/i],
    ['/grants', /grant/i],
    ['/countersign budget', /budget/i],
    ['/countersign schedules', /schedule/i],
    ['/countersign connections', /per-person|connect/i],
    ['/countersign help', /Console commands/],
    ['/countersign', /Console commands/],
  ])('`%s` is answered by the console under the name Slack uses, not sent to the model', async (line, answer) => {
    const before = (await prompts()).length;
    const run = await pipe(`${line}\n`);
    expect(run.code, run.err).toBe(0);
    expect(run.out).toMatch(answer);
    expect(run.out).not.toContain('echo:');
    expect(await prompts()).toHaveLength(before);
  });
});

describe('/grants in the console', () => {
  let db: TestDatabase;
  let dir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(path.join(tmpdir(), 'cs-console-grants-'));
    const script = path.join(dir, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        rules: [
          {
            match: 'write the note',
            rounds: [
              { toolCalls: [{ name: 'write_file', args: { path: 'note.txt', content: 'hello' } }] },
              { text: 'Done: {{lastToolResult}}' },
            ],
          },
          { rounds: [{ text: 'echo: {{lastUser}}' }] },
        ],
      }),
    );
    env = {
      DATABASE_URL: db.url,
      AI_PROVIDER: 'scripted',
      SCRIPTED_MODEL_SCRIPT: script,
      AGENT_WORKSPACE_ROOT: path.join(dir, 'workspace'),
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
    };
  });
  afterAll(async () => {
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists the grant `a` made, and `/grants revoke ID` revokes it, as the Revoke button does', async () => {
    const first = runCli(['start'], env, 'write the note\na\n/grants\n');
    expect((await first.exited).code, first.stderr()).toBe(0);
    const listed = /^([0-9a-f]{8}) · write_file with /m.exec(first.stdout());
    expect(listed, first.stdout()).not.toBeNull();
    const second = runCli(['start'], env, `/grants revoke ${listed![1]}\n/grants\n`);
    expect((await second.exited).code, second.stderr()).toBe(0);
    expect(second.stdout()).toMatch(new RegExp(`^Revoked ${listed![1]} · write_file`, 'm'));
    expect(second.stdout()).not.toMatch(/^[0-9a-f]{8} · write_file/m);
  });
});
