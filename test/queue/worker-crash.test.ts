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
        { text: 'Checking. ', toolCalls: [{ name: 'current_time', args: {} }] },
        // Slow enough that the worker is reliably killed while streaming this round.
        { text: 'The recorded time is {{lastToolResult}} and that is final.', chunkSize: 2, delayMs: 150 },
      ],
    },
  ],
};

describe('a worker killed in the middle of a turn', () => {
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
      // Longer than the test allows: the released job must be announced to the live worker, not polled for.
      WORKER_POLL_INTERVAL_MS: '60000',
    };
  });
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await h.stop();
  });

  const liveWorkers = async () =>
    Number((await h.app.pool.query('SELECT count(*) AS n FROM countersign.worker_processes')).rows[0].n);

  it('is finished by another worker within 30 s without running a recorded tool call again', async () => {
    const first = runCli(['start', '--role=worker'], env);
    workers.push(first);
    await waitFor(async () => ((await liveWorkers()) === 1 ? true : undefined), 30_000, 'the first worker');

    const item = await h.say('crash-conv', 'what time is it', { reply: { platform: 'console', channel: 'crash' } });
    const recorded = await waitFor(
      async () => {
        const { rows } = await h.app.pool.query<{ result: { content: string }; finished_at: Date }>(
          `SELECT result, finished_at FROM countersign.tool_executions WHERE work_item_id = $1 AND status = 'finished'`,
          [item.id],
        );
        return rows[0];
      },
      30_000,
      'the tool call to be recorded',
    );

    const second = runCli(['start', '--role=worker'], env);
    workers.push(second);
    await waitFor(async () => ((await liveWorkers()) === 2 ? true : undefined), 30_000, 'the second worker');
    first.child.kill('SIGKILL');
    const killedAt = Date.now();
    expect((await first.exited).signal).toBe('SIGKILL');

    const settled = await h.settled(item.id, 30_000);
    const recoverySeconds = (Date.now() - killedAt) / 1000;
    expect(settled.status).toBe('done');
    expect(recoverySeconds).toBeLessThan(30);
    // The answer uses the result recorded before the kill: the tool did not run a second time.
    expect(settled.result?.text).toBe(`Checking. The recorded time is ${recorded.result.content} and that is final.`);
    const { rows } = await h.app.pool.query(
      'SELECT finished_at FROM countersign.tool_executions WHERE work_item_id = $1',
      [item.id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].finished_at.getTime()).toBe(recorded.finished_at.getTime());
    // The first round was not asked of the model again either: the turn resumed from its checkpoint.
    const rounds = await h.app.pool.query(
      'SELECT round FROM countersign.model_rounds WHERE work_item_id = $1 ORDER BY round',
      [item.id],
    );
    expect(rounds.rows.map((r) => r.round)).toEqual([0, 1]);
  });
});
