import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { runCli, type CliProcess } from '../helpers/processes.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';

const script: Script = {
  rules: [
    {
      rounds: [
        { text: 'One. ', toolCalls: [{ name: 'current_time', args: {} }] },
        {
          text: 'Two, slowly. ',
          chunkSize: 2,
          delayMs: 100,
          toolCalls: [{ name: 'current_time', args: { timeZone: 'UTC' } }],
        },
        { text: 'Three.' },
      ],
    },
  ],
};

describe('graceful shutdown', () => {
  let h: Harness;
  const workers: CliProcess[] = [];
  let env: Record<string, string>;
  beforeAll(async () => {
    h = await startHarness({ role: 'ingress' });
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-script-'));
    writeFileSync(path.join(dir, 'script.json'), JSON.stringify(script));
    env = {
      DATABASE_URL: h.db.url,
      AI_PROVIDER: 'scripted',
      SCRIPTED_MODEL_SCRIPT: path.join(dir, 'script.json'),
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      WORKER_POLL_INTERVAL_MS: '250',
      SHUTDOWN_GRACE_SECONDS: '20',
    };
  });
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await h.stop();
  });

  it('on SIGTERM lets the running turn reach its next checkpoint and hands it to another worker', async () => {
    const pair = [runCli(['start', '--role=worker'], env), runCli(['start', '--role=worker'], env)];
    workers.push(...pair);
    await waitFor(
      async () =>
        Number((await h.app.pool.query('SELECT count(*) AS n FROM countersign.worker_processes')).rows[0].n) === 2
          ? true
          : undefined,
      30_000,
      'two workers',
    );
    const item = await h.say('graceful', 'go', { reply: { platform: 'console', channel: 'graceful' } });
    // Round 0 is done and checkpointed; round 1 is streaming slowly.
    await waitFor(
      async () => {
        const { rows } = await h.app.pool.query(
          `SELECT 1 FROM countersign.turn_checkpoints WHERE work_item_id = $1 AND round = 1`,
          [item.id],
        );
        return rows.length ? true : undefined;
      },
      30_000,
      'the first checkpoint',
    );
    // The worker running the turn: its job's lock names a pool of that process.
    const { rows: owner } = await h.app.pool.query<{ pid: number }>(
      `SELECT p.pid FROM graphile_worker._private_jobs j
         JOIN countersign.worker_slots s ON s.worker_id = j.locked_by
         JOIN countersign.worker_processes p ON p.id = s.process_id
       WHERE j.payload->>'workItemId' = $1`,
      [item.id],
    );
    const a = pair.find((w) => w.child.pid === owner[0]?.pid);
    if (!a) throw new Error('could not tell which worker runs the turn');
    a.child.kill('SIGTERM');
    const exit = await a.exited;
    expect(exit.code).toBe(0);
    // A finished round 1 (its checkpoint) before leaving, then handed over.
    expect(a.stderr()).toMatch(/"round":2,"msg":"handed the turn over to another worker"/);

    const settled = await h.settled(item.id, 30_000);
    expect(settled.status).toBe('done');
    expect(settled.result?.text).toBe('One. Two, slowly. Three.');
    const tools = await h.app.pool.query(
      'SELECT count(*)::int AS n FROM countersign.tool_executions WHERE work_item_id = $1',
      [item.id],
    );
    expect(tools.rows[0].n).toBe(2);
    // A left cleanly: its heartbeat row is gone at once, nobody had to wait for it to go stale.
    const alive = await h.app.pool.query('SELECT count(*)::int AS n FROM countersign.worker_processes');
    expect(alive.rows[0].n).toBe(1);
  });
});
