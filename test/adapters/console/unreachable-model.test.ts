import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { runCli } from '../../helpers/processes.ts';

/** A port on 127.0.0.1 nothing listens on: taken from the kernel, then given back. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the piped console when the model cannot be reached', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  const start = (baseUrl: string) =>
    runCli(
      ['start'],
      {
        DATABASE_URL: db.url,
        AI_PROVIDER: 'anthropic',
        ANTHROPIC_API_KEY: 'sk-ant-test',
        ANTHROPIC_BASE_URL: baseUrl,
        HTTP_PORT: '0',
        HTTP_HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
      },
      'hello\n',
    );

  // Before, a DNS failure read as a database outage: the turn was handed back and retried up to 25
  // times, and the process never exited (the test's timeout is what fails it then).
  it('ends the turn with one line naming the host whose name does not resolve, and exits 1', async () => {
    const run = start('http://model.invalid');
    const { code } = await run.exited;
    expect(run.stdout()).toMatch(
      /^Sorry, I couldn't finish this: could not reach the model at model\.invalid: name (not found|lookup failed)[^\n]*\n$/,
    );
    expect(code, run.stderr()).toBe(1);
  }, 60_000);

  it('ends the turn with one line naming the host whose port is closed, and exits 1', async () => {
    const port = await closedPort();
    const run = start(`http://127.0.0.1:${port}`);
    const { code } = await run.exited;
    expect(run.stdout()).toBe(
      `Sorry, I couldn't finish this: could not reach the model at 127.0.0.1:${port}: connection refused (4 attempts)\n`,
    );
    expect(code, run.stderr()).toBe(1);
  }, 60_000);
});
