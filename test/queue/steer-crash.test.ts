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
      match: '^first',
      rounds: [
        // Slow enough that the worker is reliably killed while this round streams: before the safe point.
        {
          text: 'Working on it, one moment please.',
          chunkSize: 2,
          delayMs: 150,
          toolCalls: [{ name: 'current_time', args: {} }],
        },
        { text: 'first done' },
      ],
    },
    { rounds: [{ text: 'answer to: {{lastUser}}' }] },
  ],
};

describe('a worker killed between a steering message and the safe point', () => {
  let h: Harness;
  const workers: CliProcess[] = [];
  let env: Record<string, string>;

  beforeAll(async () => {
    // This process only enqueues and observes; the work happens in real worker processes.
    h = await startHarness({ role: 'ingress' });
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-script-'));
    const scriptFile = path.join(dir, 'script.json');
    writeFileSync(scriptFile, JSON.stringify(script));
    env = {
      DATABASE_URL: h.db.url,
      AI_PROVIDER: 'scripted',
      SCRIPTED_MODEL_SCRIPT: scriptFile,
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      WORKER_HEARTBEAT_SECONDS: '1',
      WORKER_DEAD_AFTER_SECONDS: '3',
    };
  });
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await h.stop();
  });

  const liveWorkers = async () =>
    Number((await h.app.pool.query('SELECT count(*) AS n FROM countersign.worker_processes')).rows[0].n);

  it('hands the message to the model exactly once, on the worker that takes the turn over', async () => {
    // Both workers are up before the turn starts, so the kill can follow the steering message at once.
    for (let i = 0; i < 2; i++) workers.push(runCli(['start', '--role=worker'], env));
    await waitFor(async () => ((await liveWorkers()) === 2 ? true : undefined), 30_000, 'two workers');

    const reply = { platform: 'console', channel: 'steer-crash' };
    const a = await h.say('steer-crash', 'first, check the time', { reply, mode: 'steer' });
    // The process whose graphile-worker slot holds the turn's job.
    const owner = await waitFor(
      async () => {
        const { rows } = await h.app.pool.query<{ pid: number }>(
          `SELECT p.pid FROM graphile_worker._private_jobs j
             JOIN countersign.worker_slots s ON s.worker_id = j.locked_by
             JOIN countersign.worker_processes p ON p.id = s.process_id
            WHERE j.payload->>'workItemId' = $1 AND j.locked_at IS NOT NULL`,
          [a.id],
        );
        const pid = rows[0]?.pid;
        return pid === undefined ? undefined : workers.find((w) => w.child.pid === pid);
      },
      30_000,
      'the worker running the turn',
    );
    const b = await h.say('steer-crash', 'then tell me a joke', { reply, mode: 'steer' });
    // Still streaming its first round: the steering message is stored, not yet taken.
    const { rows: before } = await h.app.pool.query(`SELECT status FROM countersign.work_items WHERE id = $1`, [b.id]);
    expect(before[0]?.status).toBe('queued');
    owner.child.kill('SIGKILL');
    expect((await owner.exited).signal).toBe('SIGKILL');

    const settled = await h.settled(a.id, 45_000);
    expect(settled.status).toBe('done');
    expect(settled.result?.text).toContain('answer to: then tell me a joke');
    expect(settled.result?.text?.match(/answer to:/g)).toHaveLength(1);
    const { rows: taken } = await h.app.pool.query(`SELECT status, result FROM countersign.work_items WHERE id = $1`, [
      b.id,
    ]);
    expect(taken[0]).toMatchObject({ status: 'done', result: { takenInto: a.id } });
    // The history holds the steering message once, after the first request.
    const { rows: history } = await h.app.pool.query(
      `SELECT message->>'text' AS text FROM countersign.messages WHERE conversation_id = 'steer-crash' AND message->>'role' = 'user' ORDER BY id`,
    );
    expect(history.map((r) => r.text)).toEqual(['first, check the time', 'then tell me a joke']);
  });
});
