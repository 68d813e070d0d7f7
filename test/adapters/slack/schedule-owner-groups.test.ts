/**
 * A scheduled run checks the policy with the owner's Slack user groups as Slack lists them at run
 * time, never as they were when the schedule was made (docs/schedules.md): removed from the group the
 * policy needs, the owner's schedule pauses and they are told; when Slack cannot say, the run fails
 * with the reason and nothing runs.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { createWebClient, SlackOutbound } from '../../../src/adapters/slack/outbound.ts';
import { RateBuckets } from '../../../src/reply/rate-bucket.ts';
import type { Requester } from '../../../src/core/person.ts';
import type { ReplyTarget } from '../../../src/core/reply-target.ts';
import type { WorkItem } from '../../../src/core/work-item.ts';
import { createSchedule } from '../../../src/schedules/manage.ts';
import { tick, type SchedulerDeps } from '../../../src/schedules/scheduler.ts';
import { deleteSchedule, findSchedule, recentRuns } from '../../../src/schedules/store.ts';
import { recordScheduleEvent } from '../../../src/wiring/schedules.ts';

const CHANNEL = 'C0OPS00001';
const ALICE = 'U0ALICE001';

describe('a schedule owner’s Slack user groups at run time', () => {
  let fake: FakeSlack;
  let h: Harness;
  let dir: string;
  let oncall: string;
  let deps: SchedulerDeps;
  const told: string[] = [];

  beforeAll(async () => {
    fake = await FakeSlack.start();
    oncall = fake.world.addUserGroup(fake.team, 'oncall', [ALICE]);
    dir = mkdtempSync(path.join(tmpdir(), 'cs-owner-groups-'));
    const policy = path.join(dir, 'policy.yaml');
    writeFileSync(
      policy,
      [
        'version: 1',
        `workspaces: [slack:${fake.team}]`,
        'requesters:',
        `  allow: [slack-usergroup:${oncall}]`,
        '  refusal: "Only on-call may use me."',
      ].join('\n'),
    );
    h = await startHarness({ env: { ...fake.env({ SLACK_STREAMING: 'off' }), POLICY_FILE: policy } });
    // Each tick of this test is another hour: no listing may answer for the next one.
    const outbound = new SlackOutbound(
      createWebClient(fake.botToken, fake.apiUrl),
      new RateBuckets(h.app.pool),
      50,
      undefined,
      { groupsFreshForMs: 0 },
    );
    deps = {
      pool: h.app.pool,
      log: h.app.log,
      mayUse: (who, where) => h.app.approvals.mayUse(who, where),
      tell: async (_where, text) => {
        told.push(text);
      },
      record: recordScheduleEvent(h.app.pool),
      personNow: (who, where) => outbound.personNow(who, where),
    };
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A schedule Alice made while she was in the on-call group (her groups as captured then). */
  async function make(start: string) {
    const owner: Requester = { platform: 'slack', userId: ALICE, workspace: fake.team, groups: [oncall] };
    const place: ReplyTarget = { platform: 'slack', channel: CHANNEL, thread: randomUUID(), workspace: fake.team };
    const made = await createSchedule(
      h.app.pool,
      { maxPerPerson: 20, minIntervalSeconds: 300 },
      recordScheduleEvent(h.app.pool),
      {
        id: randomUUID(),
        owner,
        place,
        conversationId: `slack:${place.thread!}`,
        when: 'every 1h',
        task: 'summarise',
        background: false,
        catchUp: 'latest',
      },
      new Date(start),
    );
    if (!made.ok) throw new Error(made.message);
    return made.schedule;
  }
  const requesterOf = async (workItemId: string) => {
    const { rows } = await h.app.pool.query<{ item: WorkItem }>(
      `SELECT item FROM countersign.work_items WHERE id = $1`,
      [workItemId],
    );
    return rows[0]!.item.requester;
  };

  it('runs as the owner with the groups Slack lists now, and pauses once she is out of the group', async () => {
    const schedule = await make('2044-01-01T00:00:00Z');
    await tick(deps, new Date('2044-01-01T01:00:10Z'));
    const [first] = await recentRuns(h.app.pool, schedule.id);
    expect(first).toMatchObject({ outcome: 'running' });
    expect(await requesterOf(first!.work_item_id!)).toMatchObject({ userId: ALICE, groups: [oncall] });
    await h.settled(first!.work_item_id!);

    // Removed from on-call; her stored groups still name it.
    fake.world.userGroups.get(oncall)!.users = [];
    await tick(deps, new Date('2044-01-01T02:00:10Z'));
    const [second] = await recentRuns(h.app.pool, schedule.id);
    expect(second).toMatchObject({ outcome: 'refused', work_item_id: null });
    expect(await findSchedule(h.app.pool, schedule.id)).toMatchObject({ status: 'paused' });
    await waitFor(
      async () => (told.some((t) => /paused: .*Only on-call may use me/.test(t)) ? true : undefined),
      5_000,
      'the owner told',
    );
    fake.world.userGroups.get(oncall)!.users = [ALICE];
  });

  it('fails the run with the reason when Slack cannot list the groups, running nothing', async () => {
    const schedule = await make('2045-01-01T00:00:00Z');
    fake.failNext('usergroups.list', { error: 'internal_error' });
    await tick(deps, new Date('2045-01-01T01:00:10Z'));
    const [run] = await recentRuns(h.app.pool, schedule.id);
    expect(run).toMatchObject({ outcome: 'failed', work_item_id: null });
    expect(run!.detail).toMatch(
      /could not look up .*groups on the platform \(.*internal_error.*\); not run with the groups/,
    );
    expect(await findSchedule(h.app.pool, schedule.id)).toMatchObject({ status: 'active', consecutive_failures: 1 });

    // Slack answers again: the next slot runs.
    await tick(deps, new Date('2045-01-01T02:00:10Z'));
    const [next] = await recentRuns(h.app.pool, schedule.id);
    expect(next).toMatchObject({ outcome: 'running' });
    // Out of the later tests' ticks.
    await deleteSchedule(h.app.pool, schedule.id);
  });

  it('counts an owner in no group where the workspace gives the bot none (missing_scope), as a live message does', async () => {
    const schedule = await make('2048-01-01T00:00:00Z');
    fake.failNext('usergroups.list', { error: 'missing_scope' });
    await tick(deps, new Date('2048-01-01T01:00:10Z'));
    expect((await recentRuns(h.app.pool, schedule.id))[0]).toMatchObject({ outcome: 'refused', work_item_id: null });
    expect(await findSchedule(h.app.pool, schedule.id)).toMatchObject({ status: 'paused' });
  });

  // Review finding: user groups cannot tell a deactivated account from anyone else, so without this a
  // deactivated owner's schedules kept running in their name wherever the policy lets everyone use
  // the bot. users.info's `deleted` tells, where the install has users:read.
  it('takes a deactivated owner for someone no longer a member, so their schedules stop', async () => {
    const gone = 'U0GONE0001';
    fake.world.users.set(gone, {
      id: gone,
      team_id: fake.team,
      name: 'gone',
      real_name: 'Gone',
      is_bot: false,
      tz: 'Etc/UTC',
      deleted: true,
    });
    const outbound = new SlackOutbound(createWebClient(fake.botToken, fake.apiUrl), new RateBuckets(h.app.pool), 50);
    const owner: Requester = { platform: 'slack', userId: gone, workspace: fake.team };
    const place: ReplyTarget = { platform: 'slack', channel: CHANNEL, workspace: fake.team };
    expect(await outbound.personNow(owner, place)).toBeUndefined();
  });

  it('counts every account as active where the install may not read accounts (no users:read)', async () => {
    const gone = 'U0GONE0002';
    fake.world.users.set(gone, {
      id: gone,
      team_id: fake.team,
      name: 'gone2',
      real_name: 'Gone Too',
      is_bot: false,
      tz: 'Etc/UTC',
      deleted: true,
    });
    const outbound = new SlackOutbound(createWebClient(fake.botToken, fake.apiUrl), new RateBuckets(h.app.pool), 50);
    const owner: Requester = { platform: 'slack', userId: gone, workspace: fake.team };
    const place: ReplyTarget = { platform: 'slack', channel: CHANNEL, workspace: fake.team };
    fake.failNext('users.info', { error: 'missing_scope' });
    expect(await outbound.personNow(owner, place)).toMatchObject({ userId: gone });
    // Not asked again: the scope does not come back without a reinstall.
    const asked = fake.rateLimits.calls.filter((c) => c.method === 'users.info').length;
    expect(await outbound.personNow(owner, place)).toMatchObject({ userId: gone });
    expect(fake.rateLimits.calls.filter((c) => c.method === 'users.info').length).toBe(asked);
  });

  it('fails the lookup, rather than run, when Slack cannot say whether the account is active', async () => {
    const outbound = new SlackOutbound(createWebClient(fake.botToken, fake.apiUrl), new RateBuckets(h.app.pool), 50);
    const owner: Requester = { platform: 'slack', userId: ALICE, workspace: fake.team };
    const place: ReplyTarget = { platform: 'slack', channel: CHANNEL, workspace: fake.team };
    fake.failNext('users.info', { error: 'internal_error' });
    await expect(outbound.personNow(owner, place)).rejects.toThrow(/internal_error/);
  });

  it('lists the groups once for the runs of one minute, so a burst stays within Slack’s limit', async () => {
    const shared = new SlackOutbound(createWebClient(fake.botToken, fake.apiUrl), new RateBuckets(h.app.pool), 50);
    const owner: Requester = { platform: 'slack', userId: ALICE, workspace: fake.team };
    const place: ReplyTarget = { platform: 'slack', channel: CHANNEL, workspace: fake.team };
    const before = fake.rateLimits.calls.filter((c) => c.method === 'usergroups.list').length;
    const people = await Promise.all(Array.from({ length: 30 }, () => shared.personNow(owner, place)));
    expect(people.every((p) => p?.groups?.includes(oncall))).toBe(true);
    expect(fake.rateLimits.calls.filter((c) => c.method === 'usergroups.list').length - before).toBe(1);

    // A listing that failed answers nobody: the next run asks Slack again.
    const other = new SlackOutbound(createWebClient(fake.botToken, fake.apiUrl), new RateBuckets(h.app.pool), 50);
    fake.failNext('usergroups.list', { error: 'internal_error' });
    await expect(other.personNow(owner, place)).rejects.toThrow(/internal_error/);
    expect((await other.personNow(owner, place))?.groups).toEqual([oncall]);
  });
});
