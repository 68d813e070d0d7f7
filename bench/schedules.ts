import { randomUUID } from 'node:crypto';
import { createPool } from '../src/db/pool.ts';
import { createLogger } from '../src/log.ts';
import { createWebClient, SlackOutbound } from '../src/adapters/slack/outbound.ts';
import { RateBuckets } from '../src/reply/rate-bucket.ts';
import type { Requester } from '../src/core/person.ts';
import type { ReplyTarget } from '../src/core/reply-target.ts';
import { createSchedule } from '../src/schedules/manage.ts';
import { tick, type SchedulerDeps } from '../src/schedules/scheduler.ts';
import { recordScheduleEvent } from '../src/wiring/schedules.ts';
import { FakeSlack } from '../test/fakes/slack/fake-slack.ts';

export interface SchedulesResult {
  /** Due slots made into work items per second by one scheduler, with the stored owner. */
  storedPerSecond: number;
  /** The same with the owner's user groups looked up again on the fake Slack (one listing a minute). */
  lookedUpPerSecond: number;
  /** Every run's figure, in order (slots per second). */
  runs: { stored: number[]; lookedUp: number[] };
  /** usergroups.list calls one looked-up run made (the most of the two). */
  listings: number;
  schedules: number;
}

/**
 * What looking the owner's groups up again at run time costs the scheduler (docs/schedules.md): `n`
 * schedules all due at the same minute (everyone's 09:00), turned into work items by one scheduler,
 * once with the owner as stored and once with `personNow` through Slack's outbound on the fake Slack,
 * each in a database of its own; alternated twice, the best of each.
 */
export async function benchSchedules(
  freshDatabase: (name: string) => Promise<string>,
  n: number,
): Promise<SchedulesResult> {
  const slack = await FakeSlack.start();
  try {
    const group = slack.world.addUserGroup(slack.team, 'oncall', ['U0BENCH001']);
    const listed = () => slack.rateLimits.calls.filter((c) => c.method === 'usergroups.list').length;
    // Alternated twice, best of each: the first run of a process is slower (JIT, a cold Postgres).
    const stored: number[] = [];
    const lookedUp: number[] = [];
    let listings = 0;
    for (let round = 0; round < 2; round++) {
      stored.push(await slotsPerSecond(await freshDatabase(`sched_stored${round}`), n, slack.team, [group], undefined));
      const before = listed();
      lookedUp.push(await slotsPerSecond(await freshDatabase(`sched_lookup${round}`), n, slack.team, [group], slack));
      listings = Math.max(listings, listed() - before);
    }
    return {
      storedPerSecond: Math.max(...stored),
      lookedUpPerSecond: Math.max(...lookedUp),
      runs: { stored, lookedUp },
      listings,
      schedules: n,
    };
  } finally {
    await slack.close();
  }
}

async function slotsPerSecond(
  url: string,
  n: number,
  team: string,
  groups: string[],
  slack: FakeSlack | undefined,
): Promise<number> {
  const pool = createPool(url, 4);
  try {
    const owner: Requester = { platform: 'slack', userId: 'U0BENCH001', workspace: team, groups };
    const made = new Date('2030-01-01T00:00:00Z');
    for (let i = 0; i < n; i++) {
      const place: ReplyTarget = { platform: 'slack', channel: 'C0BENCH001', thread: `${i}.000001`, workspace: team };
      await createSchedule(
        pool,
        { maxPerPerson: n, minIntervalSeconds: 300 },
        recordScheduleEvent(pool),
        {
          id: randomUUID(),
          owner,
          place,
          conversationId: `bench-${i}`,
          when: 'every 1h',
          task: 'summarise',
          background: false,
          catchUp: 'latest',
        },
        made,
      );
    }
    const outbound = slack
      ? new SlackOutbound(createWebClient(slack.botToken, slack.apiUrl), new RateBuckets(pool), 50)
      : undefined;
    const deps: SchedulerDeps = {
      pool,
      log: createLogger('warn'),
      mayUse: () => ({ ok: true }),
      tell: async () => undefined,
      record: recordScheduleEvent(pool),
      ...(outbound ? { personNow: (who, where) => outbound.personNow(who, where) } : {}),
    };
    const due = new Date('2030-01-01T01:00:10Z');
    const started = performance.now();
    let enqueued = 0;
    // A tick takes at most 200 schedules; the scheduler's next ticks take the rest.
    while (enqueued < n) {
      const report = await tick(deps, due);
      if (report.enqueued === 0) throw new Error(`only ${enqueued} of ${n} slots were made`);
      enqueued += report.enqueued;
    }
    return (enqueued * 1000) / (performance.now() - started);
  } finally {
    await pool.end();
  }
}
