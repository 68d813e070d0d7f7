import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ProviderUnavailableError, type ModelProvider, type ModelRequest } from '../../src/agent/model.ts';
import { AnthropicProvider } from '../../src/agent/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/agent/providers/openai.ts';
import { isDatabaseUnavailable } from '../../src/db/errors.ts';
import { createPool, transaction, type Pool } from '../../src/db/pool.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';

const request: ModelRequest = { system: 'test', messages: [{ role: 'user', text: 'hi' }], tools: [], maxTokens: 16 };
const instantly = { sleep: async () => undefined };

/** A port on 127.0.0.1 nothing listens on: taken from the kernel, then given back. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function roundError(provider: ModelProvider): Promise<unknown> {
  const callbacks = { onText: () => undefined, onRoundRestart: () => undefined };
  return provider.streamRound(request, callbacks, new AbortController().signal).then(
    () => expect.fail('the round should not succeed'),
    (error: unknown) => error,
  );
}

const providers = {
  anthropic: (baseURL: string) =>
    new AnthropicProvider({ apiKey: 'sk-ant-test', model: 'claude-test', baseURL, maxRetries: 1, retry: instantly }),
  openai: (baseURL: string) =>
    new OpenAIProvider({
      name: 'openai',
      apiKey: 'sk-test',
      model: 'gpt-test',
      baseURL,
      maxRetries: 1,
      retry: instantly,
    }),
};

describe.each(Object.entries(providers))('a %s model host that cannot be reached', (_name, make) => {
  it('is not a database outage when its name does not resolve, and the error names the host', async () => {
    const error = await roundError(make('http://model.invalid'));
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect((error as Error).message).toMatch(
      /^could not reach the model at model\.invalid: name (not found|lookup failed)/,
    );
    expect(isDatabaseUnavailable(error)).toBe(false);
  });

  it('is not a database outage when its port is closed', async () => {
    const port = await closedPort();
    const error = await roundError(make(`http://127.0.0.1:${port}`));
    expect((error as Error).message).toBe(
      `could not reach the model at 127.0.0.1:${port}: connection refused (2 attempts)`,
    );
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});

describe('a database that cannot be reached', () => {
  let db: TestDatabase | undefined;
  let proxy: TcpProxy | undefined;
  const pools: Pool[] = [];
  afterEach(async () => {
    for (const pool of pools.splice(0)) await pool.end();
    await proxy?.close();
    await db?.drop();
  });

  it('is an outage when the pool loses it, for a query and for a transaction', async () => {
    db = await createTestDatabase();
    const target = new URL(db.url);
    proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
    const pool = createPool(TcpProxy.rewrite(db.url, proxy.port), 2);
    pools.push(pool);
    await pool.query('SELECT 1');
    proxy.cut();
    const queried = await pool.query('SELECT 1').catch((error: unknown) => error);
    const inTransaction = await transaction(pool, (client) => client.query('SELECT 1')).catch((e: unknown) => e);
    expect(isDatabaseUnavailable(queried)).toBe(true);
    expect(isDatabaseUnavailable(inTransaction)).toBe(true);
  });

  it('is an outage when the pool cannot resolve its host, and stays one wrapped in another error', async () => {
    const pool = createPool('postgres://countersign@database.invalid:5432/countersign', 1);
    pools.push(pool);
    const error = await pool.query('SELECT 1').catch((e: unknown) => e);
    expect((error as { code?: string }).code).toMatch(/ENOTFOUND|EAI_AGAIN/);
    expect(isDatabaseUnavailable(error)).toBe(true);
    expect(isDatabaseUnavailable(new Error('saving the checkpoint failed', { cause: error }))).toBe(true);
  });

  it('is not an outage when the query itself is wrong', async () => {
    db = await createTestDatabase();
    const pool = createPool(db.url, 1);
    pools.push(pool);
    const error = await pool.query('SELECT * FROM no_such_table').catch((e: unknown) => e);
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});
