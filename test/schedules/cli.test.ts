import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Requester } from '../../src/core/person.ts';
import { schedulesCommand } from '../../src/schedules/cli.ts';
import { createSchedule } from '../../src/schedules/manage.ts';
import { findSchedule } from '../../src/schedules/store.ts';
import { recordScheduleEvent } from '../../src/wiring/schedules.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

const operator: Requester = { platform: 'cli', userId: 'ops' };

describe('countersign schedules', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({});
  });
  afterAll(() => h.stop());

  async function run(...args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await schedulesCommand(h.app.pool, recordScheduleEvent(h.app.pool), operator, args, {
      out: (line) => out.push(line),
      err: (line) => err.push(line),
    });
    return { code, out, err };
  }

  it('lists every schedule, pauses, resumes and deletes by the short id, audited as the operator', async () => {
    expect((await run('list')).out).toEqual(['No schedules.']);
    const made = await createSchedule(
      h.app.pool,
      { maxPerPerson: 20, minIntervalSeconds: 300 },
      recordScheduleEvent(h.app.pool),
      {
        id: randomUUID(),
        owner: { platform: 'test', userId: 'U1' },
        place: { platform: 'test', channel: 'cli' },
        conversationId: 'cli',
        when: 'every 30m',
        task: 'tail the error log',
        background: true,
        catchUp: 'none',
      },
      new Date(),
    );
    if (!made.ok) throw new Error(made.message);
    const id = made.schedule.id.slice(0, 8);
    const listed = await run('list');
    expect(listed.out).toEqual([
      expect.stringMatching(new RegExp(`^${id}  every 30m  next .*not run yet  test:U1: tail the error log$`)),
    ]);
    expect(JSON.parse((await run('list', '--json')).out[0]!)).toHaveLength(1);
    expect(await run('history', id)).toMatchObject({ code: 0, out: ['No runs yet.'] });
    expect(await run('pause', id)).toMatchObject({ code: 0, out: [expect.stringMatching(/is paused/)] });
    expect((await run('list')).out[0]).toContain('paused: paused by cli:ops');
    expect(await run('pause', id)).toMatchObject({ code: 1, err: [expect.stringMatching(/cannot be paused/)] });
    expect(await run('resume', id)).toMatchObject({ code: 0 });
    expect(await run('delete', id)).toMatchObject({ code: 0, out: [expect.stringMatching(/is deleted/)] });
    expect(await findSchedule(h.app.pool, made.schedule.id)).toBeUndefined();
    const { rows } = await h.app.pool.query(
      `SELECT event, actor->>'userId' AS who FROM countersign.approval_audit WHERE detail->>'schedule' = $1 AND event <> 'schedule_created' ORDER BY id`,
      [made.schedule.id],
    );
    expect(rows).toEqual([
      { event: 'schedule_paused', who: 'ops' },
      { event: 'schedule_resumed', who: 'ops' },
      { event: 'schedule_deleted', who: 'ops' },
    ]);
  });

  it('refuses a wrong invocation and an unknown id', async () => {
    expect(await run('drop', 'x')).toMatchObject({ code: 2 });
    expect(await run('pause')).toMatchObject({ code: 2 });
    expect(await run('pause', 'ffffffff')).toMatchObject({
      code: 1,
      err: [expect.stringMatching(/No single schedule/)],
    });
  });
});
