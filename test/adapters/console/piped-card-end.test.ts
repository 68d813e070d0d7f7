import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { runCli } from '../../helpers/processes.ts';

describe('a piped console run whose input ends at a card', () => {
  let db: TestDatabase;
  let dir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(path.join(tmpdir(), 'cs-piped-card-'));
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

  async function query<T extends pg.QueryResultRow>(sql: string): Promise<T[]> {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      return (await client.query<T>(sql)).rows;
    } finally {
      await client.end();
    }
  }

  it('cancels the waiting turn and withdraws its card, so a later status lists nothing waiting', async () => {
    const run = runCli(['start'], env, 'write the note\n');
    expect((await run.exited).code, run.stderr()).toBe(3);
    expect(await query(`SELECT id FROM countersign.work_items WHERE status = 'awaiting_approval'`)).toEqual([]);
    expect(await query(`SELECT id FROM countersign.approval_envelopes WHERE status = 'pending'`)).toEqual([]);
    const status = runCli(['status'], { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
    expect((await status.exited).code, status.stderr()).toBe(0);
    expect(status.stdout()).not.toContain('waiting for a click');
  });
});
