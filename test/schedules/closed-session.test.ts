/**
 * A schedule made in the console answers in that terminal's session, which lives only as long as
 * its process. Once the session has closed, a run there would never be answered: it is settled as
 * failed with the reason instead of showing "running" for ever, and the next slot pauses the
 * schedule (issue 48).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_RULES } from '../../src/adapters/console/rules.ts';
import type { ApprovalService } from '../../src/approval/service.ts';
import { PlatformDirectory } from '../../src/core/platform-rules.ts';
import type { Requester } from '../../src/core/person.ts';
import type { ReplyTarget } from '../../src/core/reply-target.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { claimSession } from '../../src/queue/session-turns.ts';
import { OutboundRegistry, type Outbound } from '../../src/reply/outbound.ts';
import { createSchedule } from '../../src/schedules/manage.ts';
import { tick } from '../../src/schedules/scheduler.ts';
import { findSchedule, recentRuns } from '../../src/schedules/store.ts';
import { recordScheduleEvent, schedulerDeps } from '../../src/wiring/schedules.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const log = createLogger('silent');
let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.url, log);
  pool = createPool(db.url, 5);
});
afterAll(async () => {
  await pool.end();
  await db.drop();
});

describe('a schedule made in a console session', () => {
  it('settles a run as failed once its session closed, and pauses at the next slot', async () => {
    const session = `console-${randomUUID()}`;
    const owner: Requester = { platform: 'console', userId: 'root' };
    const place: ReplyTarget = { platform: 'console', channel: session };
    // The terminal is open: its process holds the session's lock (as the console does when it starts).
    const open = await claimSession(pool, 'console', { session, by: owner });

    const made = await createSchedule(
      pool,
      { maxPerPerson: 20, minIntervalSeconds: 300 },
      recordScheduleEvent(pool),
      {
        id: randomUUID(),
        owner,
        place,
        conversationId: `console:${session}`,
        when: 'every 1h',
        task: 'summarise',
        background: false,
        catchUp: 'latest',
      },
      new Date('2046-01-01T00:00:00Z'),
    );
    if (!made.ok) throw new Error(made.message);
    const outbounds = new OutboundRegistry();
    // The console's outbound as the scheduler sees it: no groups to look up.
    outbounds.register({ platform: 'console' } as Outbound);
    // The console's own policy check lets its operator in (an operator terminal): no policy file here.
    const approvals = { mayUse: () => ({ ok: true }), namesGroups: () => false } as unknown as ApprovalService;
    const deps = schedulerDeps({
      pool,
      log,
      approvals,
      outbounds,
      platforms: new PlatformDirectory([CONSOLE_RULES]),
    });

    await tick(deps, new Date('2046-01-01T01:00:10Z'));
    expect((await recentRuns(pool, made.schedule.id))[0]).toMatchObject({ outcome: 'running' });

    // The terminal closes (its process ended): no worker will ever answer the queued run there.
    open.release();
    await tick(deps, new Date('2046-01-01T01:01:10Z'));
    const [settled] = await recentRuns(pool, made.schedule.id);
    expect(settled).toMatchObject({
      outcome: 'failed',
      detail: expect.stringMatching(/console session .* has closed/),
    });

    await tick(deps, new Date('2046-01-01T02:00:10Z'));
    const [next] = await recentRuns(pool, made.schedule.id);
    expect(next).toMatchObject({ outcome: 'failed', work_item_id: null });
    expect(await findSchedule(pool, made.schedule.id)).toMatchObject({
      status: 'paused',
      paused_reason: expect.stringMatching(/console session .* has closed/),
    });
  });
});
