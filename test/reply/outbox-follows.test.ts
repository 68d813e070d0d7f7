import { Writable } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/db/pool.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/log.ts';
import { OutboundRegistry } from '../../src/reply/outbound.ts';
import { OutboxDeliverer } from '../../src/reply/outbox-deliverer.ts';
import { insertOutboxRow, type NewOutboxRow, type OutboxRow } from '../../src/reply/outbox.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/harness.ts';
import { RecordingOutbound } from '../helpers/recording-outbound.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';

/**
 * A reply that follows another one (a continuation's, after its parked turn's text; #35) waits for
 * that row to go. These cases run one deliverer on its own against real Postgres, with the row it
 * waits for held by another live process, so its wait is the database poll.
 */

const HERE = 'process-here';
const THERE = 'process-there';
const PARKED = '00000000-0000-4000-8000-000000000001';
const CONTINUATION = '00000000-0000-4000-8000-000000000002';

function rowOf(workItemId: string, text: string, after?: string): NewOutboxRow {
  return {
    workItemId,
    target: { platform: 'test', channel: 'follows' },
    replyState: { messageIds: [], sealed: [], carry: '' },
    text,
    buttons: [],
    announce: null,
    ...(after ? { afterWorkItemId: after } : {}),
  };
}

describe('a reply that waits for another reply in the outbox', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let admin: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase('outbox_follows');
    await migrate(db.url, createLogger('silent'));
    const u = new URL(db.url);
    proxy = await TcpProxy.start({ host: u.hostname, port: Number(u.port || 5432) });
    admin = new pg.Pool({ connectionString: db.url, max: 2 });
    // Both processes live: the other one's heartbeat stays fresh for the whole test.
    await admin.query(
      `INSERT INTO countersign.worker_processes (id, hostname, pid, role, last_seen_at)
       VALUES ($1, 'test', 1, 'worker', now() + interval '1 hour'), ($2, 'test', 2, 'worker', now() + interval '1 hour')`,
      [HERE, THERE],
    );
  });
  afterAll(async () => {
    await admin?.end();
    proxy?.restore();
    await proxy?.close();
    await db?.drop();
  });

  it('keeps waiting through a database outage, and shows once the reply it follows is gone', async () => {
    const lines: Array<{ level: number; msg: string }> = [];
    const log = createLogger(
      'warn',
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
          done();
        },
      }),
    );
    const pool = createPool(TcpProxy.rewrite(db.url, proxy.port), 4, log);
    pool.on('error', () => undefined);
    const outbound = new RecordingOutbound();
    const outbounds = new OutboundRegistry();
    outbounds.register(outbound);
    const delivered: OutboxRow[] = [];
    const deliverer = new OutboxDeliverer({
      pool,
      outbounds,
      log,
      processId: HERE,
      onDelivered: (row) => delivered.push(row),
    });
    try {
      // The parked turn's text is another live process's to deliver; the continuation's is ours.
      await insertOutboxRow(admin, rowOf(PARKED, 'The parked text.'), THERE);
      const continuation = await deliverer.write(admin, rowOf(CONTINUATION, 'The answer.', PARKED));
      deliverer.deliver(continuation);
      expect(deliverer.inFlight).toBe(1);

      proxy.cut();
      await waitFor(async () => (lines.length > 0 ? true : undefined), 30_000, 'the outage to be seen');
      proxy.restore();
      // The other process shows the parked text and removes its row.
      await admin.query('DELETE FROM countersign.reply_outbox WHERE work_item_id = $1', [PARKED]);

      await waitFor(async () => (delivered.length > 0 ? true : undefined), 30_000, 'the continuation to show');
      expect([...outbound.messages.values()].map((m) => m.text)).toEqual(['The answer.']);
      expect((await admin.query('SELECT 1 FROM countersign.reply_outbox')).rowCount).toBe(0);
    } finally {
      await deliverer.stop();
      await pool.end();
    }
  });
});
