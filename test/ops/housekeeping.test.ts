import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';

describe('housekeeping', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ env: { HISTORY_RETENTION_DAYS: '30', AUDIT_RETENTION_DAYS: '60' } });
  });
  afterAll(() => h.stop());

  it('prunes leftover checkpoints, history past retention and unused graphile-worker queues, keeping recent work', async () => {
    const old = await h.say('hk-old', 'old conversation');
    const recent = await h.say('hk-new', 'recent conversation');
    await h.settled(old.id);
    await h.settled(recent.id);
    const { pool } = h.app;
    await pool.query(
      `UPDATE countersign.messages SET created_at = now() - interval '31 days' WHERE conversation_id = 'hk-old'`,
    );
    await pool.query(
      `UPDATE countersign.work_items SET finished_at = now() - interval '31 days' WHERE conversation_id = 'hk-old'`,
    );
    await pool.query(
      `UPDATE countersign.conversations SET last_activity_at = now() - interval '31 days' WHERE id = 'hk-old'`,
    );
    // A checkpoint a crash left behind after its turn was recorded as done.
    await pool.query(
      `INSERT INTO countersign.turn_checkpoints (work_item_id, format_version, round, state) VALUES ($1, 1, 1, '{}')`,
      [recent.id],
    );
    await pool.query(
      `INSERT INTO countersign.approval_audit (event, at) VALUES ('expired', now() - interval '61 days')`,
    );
    await pool.query(`INSERT INTO graphile_worker._private_job_queues (queue_name) VALUES ('abandoned-queue')`);

    await pool.query(`SELECT graphile_worker.add_job('countersign_housekeeping', '{}'::json, priority => 10000)`);
    await waitFor(
      async () => {
        const { rows } = await pool.query(`SELECT count(*)::int AS n FROM countersign.turn_checkpoints`);
        return rows[0].n === 0 ? true : undefined;
      },
      20_000,
      'housekeeping to run',
    );
    const count = async (sql: string) => (await pool.query(sql)).rows[0].n as number;
    await waitFor(
      async () =>
        (await count(`SELECT count(*)::int AS n FROM graphile_worker._private_job_queues`)) === 0 ? true : undefined,
      10_000,
      'the queue cleanup',
    );
    expect(await count(`SELECT count(*)::int AS n FROM countersign.messages WHERE conversation_id = 'hk-old'`)).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM countersign.work_items WHERE conversation_id = 'hk-old'`)).toBe(
      0,
    );
    expect(await count(`SELECT count(*)::int AS n FROM countersign.conversations WHERE id = 'hk-old'`)).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM countersign.messages WHERE conversation_id = 'hk-new'`)).toBe(2);
    expect(
      await count(`SELECT count(*)::int AS n FROM countersign.approval_audit WHERE at < now() - interval '60 days'`),
    ).toBe(0);
  });
});
