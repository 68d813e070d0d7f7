import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { WorkerEvents } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchForStuckPools } from '../../src/queue/poisoned-pool.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const fetchFailed = (events: EventEmitter, poolId: string) =>
  events.emit('worker:getJob:error', { worker: { workerPool: { id: poolId } }, error: new Error('read ECONNRESET') });
const fetched = (events: EventEmitter, poolId: string) =>
  events.emit('worker:getJob:empty', { worker: { workerPool: { id: poolId } } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the stuck worker pool watch', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await createTestDatabase('stuck_pool');
    pool = new pg.Pool({ connectionString: db.url, max: 1 });
    // pool.end() can resolve while a connection is still closing; DROP … WITH (FORCE) then ends it.
    pool.on('error', () => undefined);
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('names a pool that keeps failing after the database answered again, once', async () => {
    const events = new EventEmitter();
    const stuck: string[] = [];
    const stop = watchForStuckPools(events as unknown as WorkerEvents, pool, (id) => stuck.push(id), 50);
    fetchFailed(events, 'p1');
    await sleep(60);
    fetchFailed(events, 'p1'); // past the threshold: the database is probed
    await sleep(50);
    expect(stuck).toEqual([]);
    fetchFailed(events, 'p1'); // failing after the database answered: stuck
    fetchFailed(events, 'p1');
    expect(stuck).toEqual(['p1']);
    stop();
  });

  it('leaves alone a pool that fetches again, and one whose database is down', async () => {
    const events = new EventEmitter();
    const stuck: string[] = [];
    const stop = watchForStuckPools(events as unknown as WorkerEvents, pool, (id) => stuck.push(id), 50);
    fetchFailed(events, 'p2');
    await sleep(60);
    fetchFailed(events, 'p2');
    await sleep(50);
    fetched(events, 'p2'); // it recovered by itself
    fetchFailed(events, 'p2');
    expect(stuck).toEqual([]);

    // One connection at most, so a query of ours waits behind the watch's probe and fails after it.
    const down = new pg.Pool({
      connectionString: 'postgres://nobody@127.0.0.1:1/none',
      connectionTimeoutMillis: 200,
      max: 1,
    });
    const other = new EventEmitter();
    const stopDown = watchForStuckPools(other as unknown as WorkerEvents, down, (id) => stuck.push(id), 50);
    fetchFailed(other, 'p3');
    await sleep(60);
    fetchFailed(other, 'p3');
    await down.query('SELECT 1').catch(() => undefined);
    fetchFailed(other, 'p3');
    expect(stuck.filter((id) => id === 'p3')).toEqual([]);
    stopDown();
    await down.end();
    stop();
  });
});
