import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { countingTool } from '../helpers/tools.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';

const runs: string[] = [];
const deployTool = countingTool('deploy_service', runs, { risk: 'medium', result: 'deployed' });
const script: Script = {
  rules: [
    {
      rounds: [
        { text: 'Deploying.', toolCalls: [{ name: 'deploy_service', args: { service: 'api' } }] },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
  ],
};

describe('an approval continuation across worker failures', () => {
  let db: TestDatabase;
  const apps: Harness[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const a of apps) await a.stop();
    await db.drop();
  });
  // Every process of one deployment shares the workspace (it is part of an approval's scope).
  const workspace = mkdtempSync(path.join(tmpdir(), 'cs-shared-ws-'));
  const start = async (role: 'all' | 'ingress' | 'worker') => {
    const h = await startHarness({ db, script, role, tools: [deployTool], env: { AGENT_WORKSPACE_ROOT: workspace } });
    apps.push(h);
    return h;
  };

  it('runs exactly once when no worker was alive between consume and continuation, and never again on replays', async () => {
    const first = await start('all');
    const item = await first.say('durable', 'deploy');
    expect((await first.settled(item.id)).status).toBe('awaiting_approval');
    const { nonce } = await waitFor(
      async () =>
        (
          await first.app.pool.query(
            `SELECT nonce FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
            [item.id],
          )
        ).rows[0] as { nonce: string } | undefined,
      10_000,
      'the card',
    );
    // Every worker goes away; only an ingress process is left to take the click.
    await first.app.stop();
    const ingress = await start('ingress');
    const click = await ingress.app.approvals.click(`${nonce}.A`, { platform: 'test', userId: 'U1' });
    if (!click.ok || !('continuation' in click)) throw new Error('expected the click to be consumed');
    const continuationId = click.continuation.id;
    const queued = await ingress.app.pool.query(
      `SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE payload->>'workItemId' = $1`,
      [continuationId],
    );
    expect(queued.rows[0].n).toBe(1);
    expect(runs).toEqual([]);

    // A worker comes back and runs the continuation.
    const worker = await start('worker');
    const done = await worker.settled(continuationId);
    expect(done.status).toBe('done');
    expect(done.result?.text).toBe('Result: deployed api');
    expect(runs).toEqual(['api']);

    // The same job delivered again (a crash after the work, before graphile-worker marked it done).
    const replay = async () => {
      await worker.app.pool.query(
        `SELECT graphile_worker.add_job('countersign_interactive', json_build_object('workItemId', $1::text), priority => 1)`,
        [continuationId],
      );
      await waitFor(
        async () => {
          const { rows } = await worker.app.pool.query(
            `SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE payload->>'workItemId' = $1`,
            [continuationId],
          );
          return rows[0].n === 0 ? true : undefined;
        },
        15_000,
        'the replayed job to be processed',
      );
    };
    await replay();
    expect(runs).toEqual(['api']);

    // A crash in the middle of the continuation: the call was recorded as started, its outcome lost.
    await worker.app.pool.query(`UPDATE countersign.work_items SET status = 'running' WHERE id = $1`, [continuationId]);
    await worker.app.pool.query(
      `UPDATE countersign.tool_executions SET status = 'started', result = NULL WHERE work_item_id = $1`,
      [continuationId],
    );
    await worker.app.pool.query(`DELETE FROM countersign.turn_checkpoints WHERE work_item_id = $1`, [continuationId]);
    await replay();
    expect(runs).toEqual(['api']);
    const after = await worker.settled(continuationId);
    expect(after.result?.text).toMatch(
      /interrupted by a worker restart and its outcome is unknown\. It was not run again/,
    );
  });
});

describe('a turn killed between its checkpoint and parking', () => {
  it('asks for approval again on replay instead of carrying on without it', async () => {
    const db = await createTestDatabase();
    const h = await startHarness({ db, script, tools: [deployTool] });
    try {
      runs.length = 0;
      const item = await h.say('replay-park', 'deploy');
      expect((await h.settled(item.id)).status).toBe('awaiting_approval');
      // Undo the park as if the worker died after writing the checkpoint, before the envelope committed.
      await h.app.pool.query(`DELETE FROM countersign.approval_envelopes WHERE work_item_id = $1`, [item.id]);
      await h.app.pool.query(`UPDATE countersign.work_items SET status = 'running' WHERE id = $1`, [item.id]);
      await h.app.pool.query(`UPDATE countersign.conversations SET active_work_item = $1 WHERE id = 'replay-park'`, [
        item.id,
      ]);
      await h.app.pool.query(
        `SELECT graphile_worker.add_job('countersign_interactive', json_build_object('workItemId', $1::text), priority => 1)`,
        [item.id],
      );
      await waitFor(
        async () => {
          const { rows } = await h.app.pool.query(
            `SELECT w.status, count(e.id)::int AS envelopes FROM countersign.work_items w
               LEFT JOIN countersign.approval_envelopes e ON e.work_item_id = w.id
             WHERE w.id = $1 GROUP BY w.status`,
            [item.id],
          );
          return rows[0]?.status === 'awaiting_approval' && rows[0].envelopes === 1 ? true : undefined;
        },
        15_000,
        'the turn to park again with a new envelope',
      );
      expect(runs).toEqual([]);
    } finally {
      await h.stop();
      await db.drop();
    }
  });
});
