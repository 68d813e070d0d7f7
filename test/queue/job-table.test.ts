import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { parseCrontab } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Requester } from '../../src/core/person.ts';
import { Priority } from '../../src/core/work-item.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { JOBS } from '../../src/queue/tasks/index.ts';
import { crontabLine, type AnyJob } from '../../src/queue/tasks/job.ts';
import { addShowCardJob, enqueueWorkItem, settleTurn } from '../../src/queue/turn-lifecycle.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const TASKS_DIR = path.resolve(import.meta.dirname, '../../src/queue/tasks');
const jobs: AnyJob[] = Object.values(JOBS);

let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase('cs_jobs');
  await migrate(db.url, createLogger('silent'));
  pool = createPool(db.url, 2);
});

afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

const requester: Requester = { platform: 'console', userId: 'local', workspace: 'local' };

const draft = (conversationId: string, priority: number) => ({
  type: 'CHAT' as const,
  priority: priority as typeof Priority.CRITICAL,
  conversationId,
  requester,
  input: { prompt: 'hi' },
  payload: {},
  reply: { platform: 'console', workspace: 'local', channel: 'local' },
});

/** The jobs graphile-worker holds for a payload key's value, as the job table should have shaped them. */
async function jobsFor(key: 'workItemId' | 'envelopeId', id: string) {
  const { rows } = await pool.query<{ task: string; priority: number; max_attempts: number }>(
    `SELECT t.identifier AS task, j.priority, j.max_attempts FROM graphile_worker._private_jobs j
       JOIN graphile_worker._private_tasks t ON t.id = j.task_id WHERE j.payload->>$1 = $2`,
    [key, id],
  );
  return rows;
}

/** The `max_attempts => N` argument of an add_job call; undefined leaves graphile-worker's default. */
function maxAttemptsOf(args: string): number | undefined {
  const found = /max_attempts\s*=>\s*(\d+)/i.exec(args);
  return found ? Number(found[1]) : undefined;
}

/** Every `graphile_worker.add_job(…)` call in the bodies of the database's own functions. */
async function addJobCallsInSql(): Promise<Array<{ fn: string; task: string; maxAttempts: number | undefined }>> {
  const { rows } = await pool.query<{ fn: string; src: string }>(
    `SELECT n.nspname || '.' || p.proname AS fn, p.prosrc AS src FROM pg_proc p
       JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = 'countersign' AND p.prosrc ILIKE '%add_job%'`,
  );
  return rows.flatMap(({ fn, src }) =>
    [...src.matchAll(/graphile_worker\.add_job\s*\(([\s\S]*?)\);/gi)].map(([, args]) => ({
      fn,
      task: args!.split(/,\s*(?:json_build_object|'\{)/)[0]!.trim(),
      maxAttempts: maxAttemptsOf(args!),
    })),
  );
}

describe('the job table (src/queue/tasks/index.ts)', () => {
  it('lists every task module of src/queue/tasks, each under its own name', async () => {
    const files = (await readdir(TASKS_DIR)).filter((f) => f.endsWith('.ts'));
    const defined: unknown[] = [];
    for (const file of files) {
      const module = (await import(path.join(TASKS_DIR, file))) as Record<string, unknown>;
      for (const value of Object.values(module)) {
        if (typeof value === 'object' && value !== null && 'createHandler' in value && 'pool' in value)
          defined.push(value);
      }
    }
    expect(defined.length).toBeGreaterThanOrEqual(jobs.length);
    for (const job of defined) expect(jobs).toContain(job);
    expect(new Set(jobs.map((j) => j.name)).size).toBe(jobs.length);
  });

  it('has the database add jobs only where the table says, with its max_attempts and a task name passed in', async () => {
    const calls = await addJobCallsInSql();
    const named = new Set(jobs.flatMap((j) => j.enqueuedInSqlBy ?? []));
    expect(new Set(calls.map((c) => c.fn))).toEqual(named);
    for (const call of calls) {
      const enqueued = jobs.filter((j) => j.enqueuedInSqlBy?.includes(call.fn));
      for (const job of enqueued) expect({ ...call, maxAttempts: job.options.maxAttempts }).toEqual(call);
      // The name comes from TypeScript (`turnJobFor`'s rule), never a literal written in the migration.
      expect(call.task).not.toMatch(/^'/);
    }
  });

  it('adds a turn’s job under the table’s task and options, interactive or background by priority', async () => {
    const critical = await enqueueWorkItem(pool, draft('jobs:interactive', Priority.CRITICAL));
    const normal = await enqueueWorkItem(pool, draft('jobs:background', Priority.NORMAL));
    expect(await jobsFor('workItemId', critical.id)).toEqual([
      {
        task: JOBS.interactiveTurn.name,
        priority: Priority.CRITICAL,
        max_attempts: JOBS.interactiveTurn.options.maxAttempts,
      },
    ]);
    expect(await jobsFor('workItemId', normal.id)).toEqual([
      {
        task: JOBS.backgroundTurn.name,
        priority: Priority.NORMAL,
        max_attempts: JOBS.backgroundTurn.options.maxAttempts,
      },
    ]);
  });

  it('hands a conversation to its next item with the table’s task and options', async () => {
    const first = await enqueueWorkItem(pool, draft('jobs:advance', Priority.HIGH));
    const next = await enqueueWorkItem(pool, draft('jobs:advance', Priority.LOW));
    expect(await jobsFor('workItemId', next.id)).toEqual([]);
    await settleTurn(pool, first, { status: 'done' });
    expect(await jobsFor('workItemId', next.id)).toEqual([
      { task: JOBS.backgroundTurn.name, priority: Priority.LOW, max_attempts: JOBS.backgroundTurn.options.maxAttempts },
    ]);
  });

  it('adds an approval card’s job under the table’s task and options', async () => {
    const envelopeId = '00000000-0000-4000-8000-000000000001';
    await addShowCardJob(pool, envelopeId);
    const { name, options } = JOBS.showApprovalCard;
    expect(await jobsFor('envelopeId', envelopeId)).toEqual([
      { task: name, priority: options.priority, max_attempts: options.maxAttempts },
    ]);
  });

  it('schedules housekeeping every minute with the table’s options, one pending job at a time', () => {
    const [item] = parseCrontab(crontabLine(JOBS.housekeeping));
    expect(item).toMatchObject({
      task: JOBS.housekeeping.name,
      options: {
        priority: Priority.IDLE,
        maxAttempts: JOBS.housekeeping.options.maxAttempts,
        jobKey: JOBS.housekeeping.name,
        jobKeyMode: 'replace',
      },
    });
    expect(item!.match).toBeTypeOf('function');
  });
});
