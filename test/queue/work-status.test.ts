import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli } from '../helpers/processes.ts';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/log.ts';
import { enqueueWorkItem } from '../../src/queue/turn-lifecycle.ts';
import { age, operatorStatusText, workStatusText } from '../../src/queue/work-status.ts';
import { Priority } from '../../src/core/work-item.ts';

/** `/countersign status` and `countersign status`: unfinished work, a person's own or everyone's. */
describe('work status', () => {
  let db: TestDatabase;
  let pool: Pool;
  const alice = { platform: 'slack', userId: 'UALICE', workspace: 'T1' };
  const bob = { platform: 'slack', userId: 'UBOB', workspace: 'T1' };

  beforeAll(async () => {
    db = await createTestDatabase('work_status');
    await migrate(db.url, createLogger('silent'));
    pool = createPool(db.url, 2);
    pool.on('error', () => undefined);
    const item = (requester: typeof alice, type: 'CODE' | 'RESEARCH', priority: number, prompt: string, c: string) =>
      enqueueWorkItem(pool, {
        type,
        priority: priority as typeof Priority.LOW,
        conversationId: c,
        requester,
        input: { prompt },
        payload: {},
        reply: { platform: 'slack', channel: 'C1', workspace: 'T1' },
      });
    await item(alice, 'CODE', Priority.NORMAL, 'fix the\nlogin <!channel> bug', 'slack:T1:C1:1');
    await item(alice, 'RESEARCH', Priority.LOW, 'queues', 'slack:T1:C1:2');
    await item(bob, 'CODE', Priority.NORMAL, 'bob’s own', 'slack:T1:C1:3');
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('lists only the person’s own work, type · priority · state · age, one line each', async () => {
    const text = await workStatusText(pool, alice);
    const lines = text.split('\n');
    expect(lines[0]).toBe('Your work (2), oldest first:');
    expect(lines[1]).toMatch(/^• CODE · NORMAL · queued · \d+ s — fix the login <!channel> bug$/);
    expect(lines[2]).toMatch(/^• RESEARCH · LOW · queued · \d+ s — queues$/);
    expect(text).not.toContain('bob');
    expect(await workStatusText(pool, { platform: 'slack', userId: 'UNOBODY' })).toBe(
      'You have no running or queued work.',
    );
  });

  it('`countersign status` lists everyone’s work for the operator, or one person’s', async () => {
    const all = await operatorStatusText(pool);
    expect(all.split('\n')).toHaveLength(3);
    expect(all).toContain('(slack:UBOB, slack:T1:C1:3)');
    const run = runCli(['status', '--person=slack:UBOB'], { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
    expect((await run.exited).code, run.stderr()).toBe(0);
    expect(run.stdout().trim().split('\n')).toHaveLength(1);
    expect(run.stdout()).toContain('bob’s own');
    const bad = runCli(['status', '--person=nobody'], { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
    expect((await bad.exited).code).toBe(2);
  });

  it('says ages the way people do', () => {
    expect([age(5), age(125), age(7300), age(200_000)]).toEqual(['5 s', '2 min', '2 h', '2 d']);
  });
});
