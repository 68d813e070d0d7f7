import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { runCli } from '../../helpers/processes.ts';

describe('/attach in the console', () => {
  let db: TestDatabase;
  let dir: string;
  beforeAll(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(path.join(tmpdir(), 'cs-console-attach-'));
    writeFileSync(path.join(dir, 'sales data.csv'), 'region,revenue\nnorth,120\n');
  });
  afterAll(() => db.drop());

  it('sends the file with the message: saved in the inbox and named in the prompt; a missing one is a note and a notice', async () => {
    const workspace = path.join(dir, 'workspace');
    const csv = path.join(dir, 'sales data.csv');
    const run = runCli(
      ['start'],
      {
        DATABASE_URL: db.url,
        AI_PROVIDER: 'scripted',
        HTTP_PORT: '0',
        HTTP_HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        AGENT_WORKSPACE_ROOT: workspace,
      },
      `/attach "${csv}" sum it\n/attach ${path.join(dir, 'missing.log')}\n/attach\n`,
    );
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    const out = run.stdout();
    expect(out).toMatch(/"sales data\.csv": saved as inbox\/console_[^ ]+\/sales data\.csv \(text, 25 bytes\)/);
    expect(out).toContain('sum it');
    expect(out).toContain('"missing.log": not read — the download failed: no such file.');
    // Told to the person too, not only in the model's note.
    expect(out).toContain('I could not read "missing.log": the download failed: no such file.');
    expect(out).toContain('Usage: /attach PATH [message]');
    const inbox = path.join(workspace, 'inbox');
    const [folder] = readdirSync(inbox);
    expect(readFileSync(path.join(inbox, folder!, 'sales data.csv'), 'utf8')).toBe('region,revenue\nnorth,120\n');
  });
});
