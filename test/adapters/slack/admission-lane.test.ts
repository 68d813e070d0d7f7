import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PoolClient } from '../../../src/db/pool.ts';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { appMention, eventCallback } from '../../fixtures/slack/events.ts';
import { startHarness, type Harness } from '../../helpers/harness.ts';

const ALICE = 'U0ALICE001';
const CHANNEL = 'C0LANE0001';
const SECRET = 'admission-lane-secret';

/**
 * Issue #35 (P10): 50 approval clicks at once made a mention sent in the same instant wait in the
 * database pool's queue behind their transactions, which held every connection. Admissions have
 * connections of their own (DATABASE_ADMISSION_POOL_SIZE), so a message is taken in meanwhile.
 */
describe('a Slack mention while other work holds every database connection of the ingress', () => {
  let fake: FakeSlack;
  let h: Harness;
  beforeAll(async () => {
    fake = await FakeSlack.start();
    h = await startHarness({
      role: 'ingress',
      env: {
        SLACK_BOT_TOKEN: fake.botToken,
        SLACK_MODE: 'http',
        SLACK_SIGNING_SECRET: SECRET,
        SLACK_API_URL: fake.apiUrl,
        DATABASE_POOL_SIZE: '2',
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('is enqueued and acknowledged before they let go', async () => {
    // Two transactions in progress hold both of the pool's connections, as click transactions
    // would, and a third query waits in the pool's queue for one of them.
    const held: PoolClient[] = [await h.app.pool.connect(), await h.app.pool.connect()];
    for (const client of held) await client.query('BEGIN');
    // (It gives up after the pool's connection timeout; the queue only has to be full when the mention comes.)
    const queued = h.app.pool.query('SELECT 1').catch(() => undefined);
    try {
      const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'status please' });
      // The ingress answers an event once its work item is committed; without a lane of its own the
      // admission would wait behind the held transactions until this times out.
      const res = await fake.post(
        `http://127.0.0.1:${h.app.http.port}/slack/events`,
        { json: eventCallback(fake.team, mention) },
        { signingSecret: SECRET, timeoutMs: 45_000 },
      );
      expect(res.status).toBe(200);
      const reader = new pg.Client({ connectionString: h.db.url });
      await reader.connect();
      try {
        const { rows } = await reader.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM countersign.work_items WHERE conversation_id = $1`,
          [`slack:${fake.team}:${CHANNEL}:${mention.ts}`],
        );
        expect(rows[0]?.n).toBe(1);
      } finally {
        await reader.end();
      }
    } finally {
      for (const client of held) {
        await client.query('ROLLBACK');
        client.release();
      }
      await queued;
    }
  });
});
