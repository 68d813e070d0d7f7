import os from 'node:os';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { isLoopbackAddress } from '../../src/http/metrics-access.ts';
import { metricsHandler } from '../../src/http/metrics.ts';
import { startHttpServer, type HttpServer } from '../../src/http/server.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const TOKEN = 'scrape-token-5f1c9a';

/** An IPv4 address of this machine other than loopback; traffic to it never leaves the machine. */
const ownNonLoopbackAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

describe('which peer addresses count as this machine', () => {
  it.each(['127.0.0.1', '127.255.3.4', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', '::FFFF:127.9.9.9'])(
    '%s is loopback',
    (address) => expect(isLoopbackAddress(address)).toBe(true),
  );
  it.each(['192.0.2.2', '10.0.0.1', '128.0.0.1', '::ffff:10.0.0.1', 'fe80::1', '::', '::2', '', undefined])(
    '%s is not loopback',
    (address) => expect(isLoopbackAddress(address)).toBe(false),
  );
});

describe('GET /metrics', () => {
  let db: TestDatabase;
  let pool: Pool;
  const servers: HttpServer[] = [];
  const log = pino({ level: 'silent' });

  // The scrape's queries fail on this empty database; /metrics then serves the process's own figures.
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool(db.url, 2);
  });
  afterAll(async () => {
    for (const server of servers) await server.close();
    await pool.end();
    await db.drop();
  });

  async function serve(host: string, token?: string): Promise<string> {
    const server = await startHttpServer(0, host, log);
    servers.push(server);
    server.route('/metrics', metricsHandler(pool, { token }));
    return `http://${host}:${server.port}/metrics`;
  }

  describe('without METRICS_TOKEN', () => {
    it('answers a loopback client with Prometheus text', async () => {
      const res = await fetch(await serve('127.0.0.1'));
      expect(res.status).toBe(200);
      expect(await res.text()).toMatch(/^countersign_workers_alive /m);
    });

    it.skipIf(!ownNonLoopbackAddress)(
      'refuses a client on another address with 403 and says to set METRICS_TOKEN',
      async () => {
        // Bound to and reached on the machine's own non-loopback address: the peer is not 127.x.
        const res = await fetch(await serve(ownNonLoopbackAddress!));
        expect(res.status).toBe(403);
        expect((await res.json()) as { error: string }).toMatchObject({
          error: expect.stringContaining('METRICS_TOKEN'),
        });
      },
    );

    it('refuses a request a local reverse proxy relayed for someone else', async () => {
      const res = await fetch(await serve('127.0.0.1'), { headers: { 'x-forwarded-for': '203.0.113.7' } });
      expect(res.status).toBe(403);
    });
  });

  describe('with METRICS_TOKEN', () => {
    it('answers a request bearing the token', async () => {
      const res = await fetch(await serve('127.0.0.1', TOKEN), { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status).toBe(200);
      expect(await res.text()).toMatch(/^countersign_workers_alive /m);
    });

    it.each([
      ['no Authorization header', undefined],
      ['a wrong token', `Bearer ${TOKEN}x`],
      ['a prefix of the token', `Bearer ${TOKEN.slice(0, 5)}`],
      ['the token in another scheme', `Basic ${TOKEN}`],
    ])('refuses %s with 401, even from loopback, without echoing the token', async (_case, authorization) => {
      const res = await fetch(await serve('127.0.0.1', TOKEN), {
        headers: authorization ? { authorization } : {},
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await res.text()).not.toContain(TOKEN.slice(0, 5));
    });
  });
});
