import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../src/agent/tools/tool.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';
import type { Requester } from '../../src/core/person.ts';
import type { ReplyTarget } from '../../src/core/reply-target.ts';
import { createSchedule } from '../../src/schedules/manage.ts';
import { tick, type SchedulerDeps } from '../../src/schedules/scheduler.ts';
import { recentRuns, findSchedule } from '../../src/schedules/store.ts';
import { recordScheduleEvent } from '../../src/wiring/schedules.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';

const deployTool = defineTool({
  name: 'deploy_service',
  description: 'Deploys a service to production.',
  version: '1',
  input: z.object({ service: z.string() }),
  approval: 'always',
  risk: 'medium',
  idempotent: false,
  async execute({ service }) {
    return `deployed ${service}`;
  },
});

const script: Script = {
  rules: [
    {
      match: 'deploy (\\w+)',
      rounds: [
        { text: 'Deploying.', toolCalls: [{ name: 'deploy_service', args: { service: 'api' } }] },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    { match: 'explode', rounds: [{ error: 'the model is on fire' }] },
    { rounds: [{ text: 'summary: nothing happened' }] },
  ],
};

const alice: Requester = { platform: 'test', userId: 'U1' };
const LIMITS = { maxPerPerson: 20, minIntervalSeconds: 300 };

describe('the scheduler', () => {
  let h: Harness;
  let told: Array<{ place: ReplyTarget; text: string }>;
  let deps: SchedulerDeps;

  beforeAll(async () => {
    h = await startHarness({ script });
    h.app.tools.add(deployTool);
    told = [];
    deps = {
      pool: h.app.pool,
      log: h.app.log,
      mayUse: (owner, place) => h.app.approvals.mayUse(owner, place),
      tell: async (place, text) => {
        told.push({ place, text });
      },
      record: recordScheduleEvent(h.app.pool),
    };
  });
  afterAll(() => h.stop());

  // The tests share one database and each moves the clock further on: a tick also runs the earlier
  // tests' schedules, so each test checks its own schedules' runs, never a tick's totals.

  /** A schedule made at `now` in its own channel (its own conversation). */
  async function make(when: string, task: string, now: Date, options: { catchUp?: 'latest' | 'none' } = {}) {
    const channel = `sched-${randomUUID().slice(0, 8)}`;
    const made = await createSchedule(
      h.app.pool,
      LIMITS,
      recordScheduleEvent(h.app.pool),
      {
        id: randomUUID(),
        owner: alice,
        place: { platform: 'test', channel },
        conversationId: channel,
        when,
        task,
        background: false,
        catchUp: options.catchUp ?? 'latest',
      },
      now,
    );
    if (!made.ok) throw new Error(made.message);
    return made.schedule;
  }

  const runsOf = async (id: string) => (await recentRuns(h.app.pool, id)).map((r) => r.slot.toISOString()).sort();

  it('runs a cron schedule at its slots in its time zone, across the change to summer time', async () => {
    // Europe/Berlin moves from UTC+1 to UTC+2 at 02:00 on Sunday 29 March 2037.
    const schedule = await make('0 9 * * * Europe/Berlin', 'summarise', new Date('2037-03-27T12:00:00Z'));
    expect(schedule.next_run_at?.toISOString()).toBe('2037-03-28T08:00:00.000Z');
    for (const now of ['2037-03-28T08:00:30Z', '2037-03-29T07:00:30Z', '2037-03-30T07:00:30Z']) {
      await tick(deps, new Date(now));
    }
    expect(await runsOf(schedule.id)).toEqual([
      '2037-03-28T08:00:00.000Z', // 09:00 CET
      '2037-03-29T07:00:00.000Z', // 09:00 CEST, the day the clocks change
      '2037-03-30T07:00:00.000Z',
    ]);
    expect((await findSchedule(h.app.pool, schedule.id))?.next_run_at?.toISOString()).toBe('2037-03-31T07:00:00.000Z');
  });

  it('makes one run per slot when two schedulers tick at once', async () => {
    const schedules = await Promise.all(
      Array.from({ length: 5 }, () => make('every 10m', 'race', new Date('2038-01-01T00:00:00Z'))),
    );
    const now = new Date('2038-01-01T00:10:05Z');
    await Promise.all([tick(deps, now), tick(deps, now), tick(deps, now)]);
    for (const s of schedules) expect(await runsOf(s.id)).toEqual(['2038-01-01T00:10:00.000Z']);
    const { rows } = await h.app.pool.query(
      `SELECT count(*)::int AS n FROM countersign.work_items WHERE item->'payload'->>'scheduleId' = ANY($1::text[])`,
      [schedules.map((s) => s.id)],
    );
    expect(rows[0].n).toBe(5);
  });

  it('makes up at most one run after downtime (catch_up latest), and none with catch_up none', async () => {
    const made = new Date('2039-05-01T00:00:00Z');
    const latest = await make('every 15m', 'catch up', made);
    const none = await make('every 15m', 'skip', made, { catchUp: 'none' });
    // Down for a day: 96 slots passed.
    const back = new Date('2039-05-02T00:10:00Z');
    await tick(deps, back);
    await tick(deps, back);
    expect(await runsOf(latest.id)).toEqual(['2039-05-02T00:00:00.000Z']);
    expect(await runsOf(none.id)).toEqual([]);
    for (const s of [latest, none]) {
      expect((await findSchedule(h.app.pool, s.id))?.next_run_at?.toISOString()).toBe('2039-05-02T00:15:00.000Z');
    }
    // Back on time, catch_up none runs its slots as usual.
    await tick(deps, new Date('2039-05-02T00:15:20Z'));
    expect(await runsOf(none.id)).toEqual(['2039-05-02T00:15:00.000Z']);
  });

  it('ends a run whose card nobody answered as expired, and the schedule goes on', async () => {
    const schedule = await make('every 1h', 'deploy api', new Date('2040-01-01T00:00:00Z'));
    await tick(deps, new Date('2040-01-01T01:00:10Z'));
    const [run] = await recentRuns(h.app.pool, schedule.id);
    const envelope = await waitFor(
      async () => {
        const { rows } = await h.app.pool.query(
          `SELECT id, requester FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
          [run!.work_item_id],
        );
        return rows[0] as { id: string; requester: Requester } | undefined;
      },
      20_000,
      'the run’s card',
    );
    expect(envelope.requester).toMatchObject(alice);
    await h.app.pool.query(
      `UPDATE countersign.approval_envelopes SET expires_at = now() - interval '1 second' WHERE id = $1`,
      [envelope.id],
    );
    await h.app.approvals.expireStale();
    await tick(deps, new Date('2040-01-01T01:30:00Z'));
    const [expired] = await recentRuns(h.app.pool, schedule.id);
    expect(expired).toMatchObject({ outcome: 'expired', detail: 'waited for approval, expired' });
    const after = await findSchedule(h.app.pool, schedule.id);
    expect(after).toMatchObject({ status: 'active', consecutive_failures: 0 });
    await tick(deps, new Date('2040-01-01T02:00:10Z'));
    expect(await runsOf(schedule.id)).toEqual(['2040-01-01T01:00:00.000Z', '2040-01-01T02:00:00.000Z']);
  });

  it('pauses after three failed runs in a row and tells the owner why', async () => {
    const schedule = await make('every 1h', 'explode', new Date('2041-01-01T00:00:00Z'));
    for (let hour = 1; hour <= 3; hour++) {
      await tick(deps, new Date(`2041-01-01T0${hour}:00:10Z`));
      const [run] = await recentRuns(h.app.pool, schedule.id);
      await h.settled(run!.work_item_id!);
      await tick(deps, new Date(`2041-01-01T0${hour}:30:00Z`));
    }
    const runs = await recentRuns(h.app.pool, schedule.id);
    expect(runs.map((r) => r.outcome)).toEqual(['failed', 'failed', 'failed']);
    expect(await findSchedule(h.app.pool, schedule.id)).toMatchObject({ status: 'paused', consecutive_failures: 3 });
    const note = told.find((t) => t.place.channel === schedule.place.channel);
    expect(note?.text).toMatch(/is paused: its last 3 runs failed/);
    await tick(deps, new Date('2041-01-01T04:00:10Z'));
    expect(await recentRuns(h.app.pool, schedule.id)).toHaveLength(3);
    const { rows } = await h.app.pool.query(
      `SELECT event FROM countersign.approval_audit WHERE detail->>'schedule' = $1 ORDER BY id`,
      [schedule.id],
    );
    expect(rows.map((r) => r.event)).toEqual([
      'schedule_created',
      'schedule_run',
      'schedule_run',
      'schedule_run',
      'schedule_paused',
    ]);
  });

  it('pauses a schedule whose owner may no longer use the bot there, and tells them', async () => {
    const schedule = await make('every 1h', 'summarise', new Date('2042-01-01T00:00:00Z'));
    // The policy in force at run time refuses the owner (as if removed from the policy file).
    const removed: SchedulerDeps = { ...deps, mayUse: () => ({ ok: false, refusal: 'not on the list' }) };
    await tick(removed, new Date('2042-01-01T01:00:10Z'));
    expect(await findSchedule(h.app.pool, schedule.id)).toMatchObject({ status: 'paused' });
    const [run] = await recentRuns(h.app.pool, schedule.id);
    expect(run).toMatchObject({ outcome: 'refused', work_item_id: null });
    expect(told.find((t) => t.place.channel === schedule.place.channel)?.text).toMatch(
      /is paused: test:U1 may no longer use the bot here \(not on the list\)/,
    );
  });
});
