import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';

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
    await pool.query(
      `INSERT INTO countersign.approval_audit_budget (actor, window_start, written, suppressed) VALUES
         ('slack:U0OLD', date_trunc('minute', now() - interval '61 days'), 20, 980),
         ('slack:U0NEW', date_trunc('minute', now()), 20, 5)`,
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
    expect(await count(`SELECT count(*)::int AS n FROM countersign.approval_audit_budget`)).toBe(1);
  });

  it('forgets inbound event marks past Slack’s retry window and rate buckets idle for an hour, keeping recent ones', async () => {
    const { pool } = h.app;
    await pool.query(
      `INSERT INTO countersign.inbound_events (event_id, received_at) VALUES
         ('slack:EvOLD', now() - interval '2 hours 1 minute'), ('slack:EvRECENT', now() - interval '90 minutes')`,
    );
    await pool.query(
      `INSERT INTO countersign.rate_buckets (key, tokens, updated_at) VALUES
         ('slack:T0IDLE:chat.update', 3, now() - interval '61 minutes'), ('slack:T0BUSY:chat.update', 3, now())`,
    );
    await pool.query(`SELECT graphile_worker.add_job('countersign_housekeeping', '{}'::json, priority => 10000)`);
    await waitFor(
      async () => {
        const { rows } = await pool.query(
          `SELECT count(*)::int AS n FROM countersign.inbound_events WHERE event_id = 'slack:EvOLD'`,
        );
        return rows[0].n === 0 ? true : undefined;
      },
      20_000,
      'housekeeping to run',
    );
    const keys = async (sql: string) => (await pool.query<{ k: string }>(sql)).rows.map((r) => r.k).sort();
    expect(await keys(`SELECT event_id AS k FROM countersign.inbound_events`)).toEqual(['slack:EvRECENT']);
    expect(await keys(`SELECT key AS k FROM countersign.rate_buckets WHERE key LIKE 'slack:T0%'`)).toEqual([
      'slack:T0BUSY:chat.update',
    ]);
  });
});
