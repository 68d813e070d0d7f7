import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli } from '../helpers/processes.ts';

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
