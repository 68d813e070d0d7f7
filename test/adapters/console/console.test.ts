import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { runCli } from '../../helpers/processes.ts';

describe('the console adapter with piped stdin', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('prints one final reply per line, in order, and exits 0 after the last', async () => {
    const run = runCli(
      ['start'],
      { DATABASE_URL: db.url, AI_PROVIDER: 'scripted', HTTP_PORT: '0', HTTP_HOST: '127.0.0.1', LOG_LEVEL: 'silent' },
      'hi there\nwhat time is it?\n',
    );
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    const lines = run.stdout().trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain('echo: "hi there"');
    expect(lines[1]).toMatch(/^Let me check the clock\. The current time is UTC: \d{4}-\d\d-\d\dT/);
  });
});

describe('approvals in the console', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('shows the card, takes the answer from the next line through the verify-and-consume path, and continues', async () => {
    const run = runCli(
      ['start'],
      { DATABASE_URL: db.url, AI_PROVIDER: 'scripted', HTTP_PORT: '0', HTTP_HOST: '127.0.0.1', LOG_LEVEL: 'silent' },
      'please deploy it\nmaybe\n1\nthanks\n',
    );
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    const out = run.stdout();
    expect(out).toContain('**Question from the agent**');
    expect(out).toContain('Deploy the demo service to production?');
    expect(out).toContain('Please answer with a number 1-2.');
    expect(out).toContain(
      'The person answered: Yes, deploy. (The scripted demo model does not deploy anything for real.)',
    );
    expect(out.trimEnd().split('\n').at(-1)).toContain('echo: "thanks"');
  });
});

describe('the console when a turn stops at an approval card', () => {
  let db: TestDatabase;
  let dir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(path.join(tmpdir(), 'cs-console-card-'));
    const script = path.join(dir, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        rules: [
          {
            match: 'write the note',
            rounds: [
              {
                text: 'I will write the note first.',
                toolCalls: [{ name: 'write_file', args: { path: 'note.txt', content: 'hello' } }],
              },
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

  it('prints the text streamed before the card, then the card, as a terminal shows them', async () => {
    const run = runCli(['start'], env, 'write the note\ny\n');
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    const out = run.stdout();
    const said = out.indexOf('I will write the note first.');
    const card = out.indexOf('**Approval needed**');
    expect(said, out).toBeGreaterThanOrEqual(0);
    expect(card, out).toBeGreaterThan(said);
    // Separated the way the terminal renderer separates two messages.
    expect(out.slice(said, card)).toBe('I will write the note first.\n\n');
    expect(out).toContain('Done:');
    expect(readFileSync(path.join(dir, 'workspace', 'note.txt'), 'utf8')).toBe('hello');
  });

  it('takes `a` as "Always allow here": the grant is made, and the same call then runs without a card', async () => {
    const workspace = path.join(dir, 'always');
    const run = runCli(['start'], { ...env, AGENT_WORKSPACE_ROOT: workspace }, 'write the note\na\nwrite the note\n');
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    expect(run.stdout()).toMatch(
      /write_file` approved by console:\S+ · always allowed here from now on \(grant [0-9a-f]{8}\)/,
    );
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ tool: string; uses: number }>(
        `SELECT tool, uses FROM countersign.grants WHERE revoked_at IS NULL`,
      );
      // Used once: by the second request, which ran under the grant instead of asking.
      expect(rows).toEqual([{ tool: 'write_file', uses: 1 }]);
    } finally {
      await client.end();
    }
    expect(run.stdout().trimEnd().endsWith('I will write the note first.\n\nDone: Wrote 5 bytes to note.txt.')).toBe(
      true,
    );
  });

  it('exits 3 and names the calls left undecided when input ends while the card waits', async () => {
    const run = runCli(['start'], { ...env, AGENT_WORKSPACE_ROOT: path.join(dir, 'untouched') }, 'write the note\n');
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(3);
    expect(run.stderr()).toMatch(/not approved and did not run:\n {2}1\. write_file \{.*"path": "note\.txt"/);
    expect(run.stdout()).toContain('**Approval needed**');
    expect(existsSync(path.join(dir, 'untouched', 'note.txt'))).toBe(false);
  });
});
