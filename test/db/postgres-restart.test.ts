import { mkdtemp, rm } from 'node:fs/promises';
import { chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';

describe('a Postgres restart in the middle of a turn', () => {
  let h: Harness | undefined;
  let pg: EmbeddedDatabase | undefined;
  let dir: string | undefined;
  afterAll(async () => {
    await h?.stop();
    await pg?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('loses nothing: the turn finishes, its tool ran once, and the reply is one complete message', async () => {
    // A cluster of this test's own, so restarting it disturbs no other test; in the system's temporary
    // directory, never in the repository's .data. Postgres may run as another user: it must reach it.
    dir = await mkdtemp(path.join(os.tmpdir(), 'restart-pg-'));
    chmodSync(dir, 0o755);
    const port = await freePort();
    const options = { dir: path.join(dir, 'data'), port, database: 'countersign' };
    pg = await startEmbeddedPostgres(options);
    const url = pg.url;
    h = await startHarness({
      db: { url, drop: async () => undefined },
      env: { WORKER_HEARTBEAT_SECONDS: '1' },
      script: {
        rules: [
          {
            rounds: [
              { text: 'Checking first. ', toolCalls: [{ name: 'current_time', args: {} }] },
              { text: 'The time is {{lastToolResult}}. That is all.', chunkSize: 3, delayMs: 60 },
            ],
          },
        ],
      },
    });
    const item = await h.say('restart', 'what time is it');
    const harness = h;
    await waitFor(
      async () => {
        const { rows } = await harness.app.pool.query(
          `SELECT 1 FROM countersign.tool_executions WHERE work_item_id = $1 AND status = 'finished'`,
          [item.id],
        );
        return rows.length ? true : undefined;
      },
      20_000,
      'the tool to have run',
    );
    await pg.stop();
    // The app's connections have seen it go (the restart below then takes seconds of outage more).
    await waitFor(
      () =>
        harness.app.pool.query('SELECT 1').then(
          () => undefined,
          () => true,
        ),
      10_000,
      "the app's pool to lose the database",
    );
    pg = await startEmbeddedPostgres(options);

    const settled = await h.settled(item.id, 60_000);
    expect(settled.status).toBe('done');
    const { rows } = await h.app.pool.query(
      'SELECT count(*)::int AS n FROM countersign.tool_executions WHERE work_item_id = $1',
      [item.id],
    );
    expect(rows[0].n).toBe(1);
    const messages = h.outbound.channelText('restart');
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/^Checking first\. The time is UTC: .+\. That is all\.$/);

    // The pipeline keeps working after the restart.
    const next = await h.say('restart-2', 'and now?');
    expect((await h.settled(next.id, 30_000)).status).toBe('done');
  }, 120_000);
});
