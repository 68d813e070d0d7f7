import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Priority, type WorkItem } from '../../src/core/work-item.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { enqueueWorkItem, settleTurn } from '../../src/queue/turn-lifecycle.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';

/** What graphile-worker holds for a work item's job: its priority, and whether a worker took it. */
async function jobOf(
  pool: Pool,
  itemId: string,
): Promise<{ priority: number; locked: boolean; backlog: boolean } | undefined> {
  const { rows } = await pool.query<{ priority: number; locked: boolean; backlog: boolean }>(
    `SELECT priority, locked_at IS NOT NULL AS locked, coalesce(flags ? 'backlog', false) AS backlog
       FROM graphile_worker._private_jobs WHERE payload->>'workItemId' = $1`,
    [itemId],
  );
  return rows[0];
}

const turnIn = (platform: string, workspace: string | undefined, conversationId: string, priority: number) => ({
  type: 'CHAT' as const,
  priority: priority as typeof Priority.CRITICAL,
  conversationId,
  requester: { platform, userId: 'U1' },
  input: { prompt: 'hi' },
  payload: {},
  reply: { platform, channel: conversationId, ...(workspace === undefined ? {} : { workspace }) },
});

describe('turn jobs ranked by how busy their place is (migration 028)', () => {
  let db: TestDatabase;
  let pool: Pool;
  beforeAll(async () => {
    db = await createTestDatabase('cs_fair');
    await migrate(db.url, createLogger('silent'));
    pool = createPool(db.url, 2);
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  const burst = async (platform: string, workspace: string | undefined, n: number, priority: number) => {
    const items: WorkItem[] = [];
    for (let i = 0; i < n; i++) {
      items.push(
        await enqueueWorkItem(pool, turnIn(platform, workspace, `${platform}-${workspace}-${priority}-${i}`, priority)),
      );
    }
    return items;
  };

  it('gives a busy workspace’s later turns a lower rank, never below the next priority class', async () => {
    const items = await burst('slack', 'TBUSY', 12, Priority.CRITICAL);
    const priorities = await Promise.all(items.map(async (item) => (await jobOf(pool, item.id))!.priority));
    expect(priorities).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9]);
    // Only the first had nothing of its place outstanding: the express pool may take it, no other.
    const backlog = await Promise.all(items.map(async (item) => (await jobOf(pool, item.id))!.backlog));
    expect(backlog).toEqual([false, ...Array<boolean>(11).fill(true)]);
  });

  it('gives a quiet workspace’s first turn its class’s own priority while another workspace is busy', async () => {
    const [quiet] = await burst('slack', 'TQUIET', 1, Priority.CRITICAL);
    expect(await jobOf(pool, quiet!.id)).toMatchObject({ priority: Priority.CRITICAL, backlog: false });
  });

  it('does not count another platform’s workspace of the same id, or another class, against a turn', async () => {
    const [discord] = await burst('discord', 'TBUSY', 1, Priority.CRITICAL);
    const [high] = await burst('slack', 'TBUSY', 1, Priority.HIGH);
    expect((await jobOf(pool, discord!.id))?.priority).toBe(Priority.CRITICAL);
    expect((await jobOf(pool, high!.id))?.priority).toBe(Priority.HIGH);
  });

  it('treats turns with no workspace (a console, a Discord DM) as one place of their platform', async () => {
    const items = await burst('console', undefined, 3, Priority.CRITICAL);
    const priorities = await Promise.all(items.map(async (item) => (await jobOf(pool, item.id))!.priority));
    expect(priorities).toEqual([1, 2, 3]);
  });

  it('stops counting a turn once it settled, so a workspace that calmed down ranks first again', async () => {
    const items = await burst('slack', 'TCALM', 3, Priority.CRITICAL);
    for (const item of items) await settleTurn(pool, item, { status: 'done' });
    const [next] = await burst('slack', 'TCALM', 1, Priority.CRITICAL);
    expect((await jobOf(pool, next!.id))?.priority).toBe(Priority.CRITICAL);
  });

  it('ranks a conversation’s next turn when it is handed the conversation, by the backlog then', async () => {
    const [busyA, busyB] = await burst('slack', 'THAND', 2, Priority.CRITICAL);
    const first = await enqueueWorkItem(pool, turnIn('slack', 'THAND', 'hand-over', Priority.CRITICAL));
    const next = await enqueueWorkItem(pool, turnIn('slack', 'THAND', 'hand-over', Priority.CRITICAL));
    expect(await jobOf(pool, first.id)).toMatchObject({ priority: Priority.CRITICAL + 2, backlog: true });
    await settleTurn(pool, busyA!, { status: 'done' });
    await settleTurn(pool, first, { status: 'done' });
    // When `next` becomes its conversation's head, one other turn of the workspace is outstanding.
    expect((await jobOf(pool, next.id))?.priority).toBe(Priority.CRITICAL + 1);
    await settleTurn(pool, busyB!, { status: 'done' });
  });
});

/** The burst's turns keep their slots busy for a while, so a backlog builds behind them. */
const BURST_SCRIPT = {
  rules: [
    { match: '^burst', rounds: [{ text: 'zzzzzzzz', chunkSize: 1, delayMs: 150 }] },
    { rounds: [{ text: 'right away' }] },
  ],
};

const replyIn = (conversation: string, workspace: string) => ({
  reply: { platform: 'test', channel: conversation, workspace },
});

/** When each item started and finished. */
async function timesOf(pool: Pool, items: WorkItem[]) {
  const { rows } = await pool.query<{ id: string; started_at: Date; finished_at: Date }>(
    `SELECT id, started_at, finished_at FROM countersign.work_items WHERE id = ANY($1::uuid[])`,
    [items.map((item) => item.id)],
  );
  return new Map(rows.map((r) => [r.id, { started: r.started_at.getTime(), finished: r.finished_at.getTime() }]));
}

describe('a burst in one workspace and a first turn in another', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      // No express pool here: this is about the ranks alone.
      env: { WORKER_CONCURRENCY: '2', EXPRESS_CONCURRENCY: '0' },
      script: BURST_SCRIPT,
    });
  });
  afterAll(() => h.stop());

  it('runs the quiet workspace’s turn before every turn of the busy workspace’s backlog', async () => {
    const burst: WorkItem[] = [];
    for (let i = 0; i < 8; i++) burst.push(await h.say(`busy-${i}`, `burst ${i}`, replyIn(`busy-${i}`, 'TA')));
    await waitFor(
      async () => {
        const jobs = await Promise.all(burst.map((item) => jobOf(h.app.pool, item.id)));
        return jobs.filter((job) => job?.locked).length === 2 ? true : undefined;
      },
      20_000,
      'both slots to be busy with the burst',
    );
    const quiet = await h.say('quiet', 'hello', replyIn('quiet', 'TB'));
    // The burst's turns no worker had taken when the quiet turn was enqueued: its backlog.
    const backlog: WorkItem[] = [];
    for (const item of burst) if ((await jobOf(h.app.pool, item.id))?.locked === false) backlog.push(item);
    expect(backlog.length).toBeGreaterThan(0);

    expect((await h.settled(quiet.id)).status).toBe('done');
    for (const item of burst) expect((await h.settled(item.id)).status).toBe('done');
    const times = await timesOf(h.app.pool, [quiet, ...backlog]);
    // Equal at most: when both slots free at once, the quiet turn takes one and the backlog's head
    // the other; it never waits behind the backlog.
    for (const item of backlog)
      expect(times.get(item.id)!.started).toBeGreaterThanOrEqual(times.get(quiet.id)!.started);
  });
});

describe('the express pool: a quiet place’s turn while a burst holds every interactive slot', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ env: { WORKER_CONCURRENCY: '1', EXPRESS_CONCURRENCY: '2' }, script: BURST_SCRIPT });
  });
  afterAll(() => h.stop());

  it('starts the quiet turn before any running burst turn ends, and runs the backlog one at a time', async () => {
    const burst: WorkItem[] = [];
    for (let i = 0; i < 6; i++) burst.push(await h.say(`xb-${i}`, `burst ${i}`, replyIn(`xb-${i}`, 'TA')));
    // The burst's first turn may run in either pool (nothing of its place was outstanding); every
    // later one is backlog, which only the one interactive slot takes.
    await waitFor(
      async () => {
        const jobs = await Promise.all(burst.map((item) => jobOf(h.app.pool, item.id)));
        return jobs.some((job) => job?.locked) ? true : undefined;
      },
      20_000,
      'the burst to hold a slot',
    );
    const backlogFlags = await Promise.all(
      burst.slice(1).map(async (item) => (await jobOf(h.app.pool, item.id))?.backlog),
    );
    expect(backlogFlags.every(Boolean)).toBe(true);
    const running: WorkItem[] = [];
    for (const item of burst) if ((await jobOf(h.app.pool, item.id))?.locked) running.push(item);
    const quiet = await h.say('xquiet', 'hello', replyIn('xquiet', 'TB'));

    expect((await h.settled(quiet.id)).status).toBe('done');
    for (const item of burst) expect((await h.settled(item.id)).status).toBe('done');
    const times = await timesOf(h.app.pool, [quiet, ...burst]);
    const quietStarted = times.get(quiet.id)!.started;
    // It did not wait for a slot to free up: both turns that held one were still running.
    for (const item of running) expect(quietStarted).toBeLessThan(times.get(item.id)!.finished);
    // The backlog ran one at a time in the interactive slot: no two of them overlapped.
    const backlog = burst.filter((item) => !running.includes(item)).map((item) => times.get(item.id)!);
    backlog.sort((a, b) => a.started - b.started);
    for (let i = 1; i < backlog.length; i++)
      expect(backlog[i]!.started).toBeGreaterThanOrEqual(backlog[i - 1]!.finished);
  });
});
