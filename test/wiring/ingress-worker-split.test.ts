import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../fakes/discord/index.ts';
import { dmMessage } from '../fixtures/discord/payloads.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli, type CliProcess } from '../helpers/processes.ts';
import pg from 'pg';

describe('ingress and worker in separate processes', () => {
  let fake: FakeDiscord;
  let db: TestDatabase;
  const processes: CliProcess[] = [];
  beforeAll(async () => {
    fake = await FakeDiscord.start();
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const p of processes) p.child.kill('SIGKILL');
    await fake.close();
    await db.drop();
  });

  it('takes a message in the ingress process and answers it from the worker process', async () => {
    const env = {
      DATABASE_URL: db.url,
      AI_PROVIDER: 'scripted',
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DISCORD_TOKEN: fake.token,
      DISCORD_APPLICATION_ID: fake.scene.applicationId,
      DISCORD_GUILD_ID: fake.scene.guildId,
      DISCORD_API_URL: fake.restUrl,
    };
    const ingress = runCli(['start', '--role=ingress'], env);
    processes.push(ingress);
    await fake.until(() => (fake.gateway.countOp(2) >= 1 ? true : undefined), 'the ingress to IDENTIFY', 30_000);
    const worker = runCli(['start', '--role=worker'], env);
    processes.push(worker);
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    try {
      for (let i = 0; i < 300; i++) {
        const { rows } = await pool
          .query('SELECT count(*)::int AS n FROM countersign.worker_processes')
          .catch(() => ({ rows: [{ n: 0 }] }));
        if (rows[0].n >= 1) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await pool.end();
    }
    fake.userSays(dmMessage(fake.scene, { text: 'are you split?' }));
    await fake.until(
      () =>
        fake.botTextIn(fake.scene.dmChannelId).some((t) => t.includes('echo: "are you split?"')) ? true : undefined,
      'the reply',
      30_000,
    );
    // The turn ran in the worker (it logs the turn once it is recorded), not in the ingress process.
    for (let i = 0; i < 100 && !/"msg":"turn finished"/.test(worker.stderr()); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(worker.stderr()).toMatch(/"msg":"turn finished"/);
    expect(ingress.stderr()).not.toMatch(/"msg":"turn finished"/);
  });
});
