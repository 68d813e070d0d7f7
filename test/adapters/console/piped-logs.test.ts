import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { runCli } from '../../helpers/processes.ts';

describe('logs of a piped console run', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  const env = () => ({ DATABASE_URL: db.url, AI_PROVIDER: 'scripted', HTTP_PORT: '0', HTTP_HOST: '127.0.0.1' });

  it('keeps stdout to the answers and stderr free of info lines when LOG_LEVEL is unset', async () => {
    const run = runCli(['start'], env(), 'hi there\n');
    expect((await run.exited).code, run.stderr()).toBe(0);
    expect(run.stdout().trimEnd().split('\n')).toHaveLength(1);
    const levels = run
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => (JSON.parse(l) as { level: number }).level);
    expect(levels.filter((level) => level < 40)).toEqual([]);
  });

  it('ends like the input ending, with no EPIPE stack, when the reader of its answers leaves (`| head`)', async () => {
    const run = runCli(['start'], env(), 'hi there\nand again\n');
    // The read end closes before the first answer: its write meets EPIPE, as under `npm start | head -1`.
    run.child.stdout!.destroy();
    expect((await run.exited).code, run.stderr()).toBe(0);
    expect(run.stderr()).not.toMatch(/EPIPE|^\s+at /m);
  });

  it('still logs at the level LOG_LEVEL asks for, on stderr', async () => {
    const run = runCli(['start'], { ...env(), LOG_LEVEL: 'info' }, 'hi there\n');
    expect((await run.exited).code, run.stderr()).toBe(0);
    expect(run.stdout()).not.toContain('"level"');
    expect(run.stderr()).toContain('"msg":"Countersign is running"');
  });
});
