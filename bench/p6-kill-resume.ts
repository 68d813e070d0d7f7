import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { enqueueWorkItem } from '../src/queue/turn-lifecycle.ts';
import { Priority } from '../src/core/work-item.ts';

const CLI = path.resolve(import.meta.dirname, '../src/cli.ts');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface P6Result {
  /** SIGKILL → the turn running again on the other worker. */
  resumedAfterSeconds: number;
  /** SIGKILL → the turn finished. */
  finishedAfterSeconds: number;
  deadAfterSeconds: number;
}

/** A worker SIGKILLed mid-turn, with the default liveness settings; another worker resumes the turn. */
export async function benchP6(connectionString: string): Promise<P6Result> {
  const dir = mkdtempSync(path.join(tmpdir(), 'p6-'));
  const script = path.join(dir, 'script.json');
  writeFileSync(
    script,
    JSON.stringify({ rules: [{ rounds: [{ text: 'slow '.repeat(30), chunkSize: 5, delayMs: 400 }] }] }),
  );
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    DATABASE_URL: connectionString,
    AI_PROVIDER: 'scripted',
    SCRIPTED_MODEL_SCRIPT: script,
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
  };
  const pool = new pg.Pool({ connectionString, max: 2 });
  const children = [0, 1].map(() => spawn(process.execPath, [CLI, 'start', '--role=worker'], { env, stdio: 'ignore' }));
  try {
    const count = async (sql: string, params: unknown[] = []) =>
      Number((await pool.query(sql, params)).rows[0]?.n ?? 0);
    while ((await count('SELECT count(*) AS n FROM countersign.worker_processes')) < 2) await sleep(100);
    const item = await enqueueWorkItem(pool, {
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: `p6-${Date.now()}`,
      requester: { platform: 'bench', userId: 'U1' },
      input: { prompt: 'go' },
      reply: { platform: 'console', channel: 'p6' },
    });
    let pid: number | undefined;
    while (!pid) {
      const { rows } = await pool.query<{ pid: number }>(
        `SELECT p.pid FROM graphile_worker._private_jobs j
           JOIN countersign.worker_slots s ON s.worker_id = j.locked_by
           JOIN countersign.worker_processes p ON p.id = s.process_id
         WHERE j.payload->>'workItemId' = $1`,
        [item.id],
      );
      pid = rows[0]?.pid;
      if (!pid) await sleep(50);
    }
    await sleep(1000); // mid-turn
    const victim = children.find((c) => c.pid === pid)!;
    victim.kill('SIGKILL');
    const killedAt = performance.now();
    let resumedAfterSeconds = NaN;
    for (;;) {
      const { rows } = await pool.query<{ status: string; attempts: number }>(
        'SELECT status, attempts FROM countersign.work_items WHERE id = $1',
        [item.id],
      );
      const row = rows[0]!;
      if (Number.isNaN(resumedAfterSeconds) && row.attempts >= 2)
        resumedAfterSeconds = (performance.now() - killedAt) / 1000;
      if (row.status === 'done') {
        return {
          resumedAfterSeconds,
          finishedAfterSeconds: (performance.now() - killedAt) / 1000,
          deadAfterSeconds: 15,
        };
      }
      if (performance.now() - killedAt > 120_000) throw new Error('the killed turn did not finish in 120 s');
      await sleep(100);
    }
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await pool.end();
  }
}
