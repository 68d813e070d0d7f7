/**
 * A scheduled run checks the policy with the owner's Discord roles as Get Guild Member says at run
 * time, never as they were when the schedule was made (docs/schedules.md): a role taken away, or the
 * owner gone from the server, pauses the schedule.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import type { ApiUser } from '../../fixtures/discord/objects.ts';
import { snowflake } from '../../fixtures/discord/snowflake.ts';
import { startHarness, type Harness } from '../../helpers/harness.ts';
import { createRest, DiscordOutbound } from '../../../src/adapters/discord/outbound.ts';
import { RateBuckets } from '../../../src/reply/rate-bucket.ts';
import type { ReplyTarget } from '../../../src/core/reply-target.ts';
import { createSchedule } from '../../../src/schedules/manage.ts';
import { tick, type SchedulerDeps } from '../../../src/schedules/scheduler.ts';
import { findSchedule, recentRuns } from '../../../src/schedules/store.ts';
import { recordScheduleEvent } from '../../../src/wiring/schedules.ts';

const person = (name: string): ApiUser => ({
  id: snowflake(),
  username: name,
  global_name: name,
  discriminator: '0',
  avatar: null,
});

describe('a schedule owner’s Discord roles at run time', () => {
  let fake: FakeDiscord;
  let h: Harness;
  let dir: string;
  let role: string;
  let deps: SchedulerDeps;
  const rita = person('rita');
  const gus = person('gus');

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    fake.world.addMember(rita);
    fake.world.addMember(gus);
    role = fake.world.addRole('oncall', [rita.id, gus.id]);
    dir = mkdtempSync(path.join(tmpdir(), 'cs-owner-roles-'));
    const policy = path.join(dir, 'policy.yaml');
    writeFileSync(
      policy,
      ['version: 1', 'requesters:', `  allow: [discord-role:${role}]`, '  refusal: "Only on-call may use me."'].join(
        '\n',
      ),
    );
    h = await startHarness({ env: { POLICY_FILE: policy } });
    const outbound = new DiscordOutbound(
      createRest(fake.token, fake.restUrl),
      new RateBuckets(h.app.pool),
      fake.scene.applicationId,
      fake.restUrl,
    );
    deps = {
      pool: h.app.pool,
      log: h.app.log,
      mayUse: (who, where) => h.app.approvals.mayUse(who, where),
      tell: async () => undefined,
      record: recordScheduleEvent(h.app.pool),
      personNow: (who, where) => outbound.personNow(who, where),
    };
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function make(owner: ApiUser, start: string) {
    const place: ReplyTarget = { platform: 'discord', channel: fake.scene.channelId, workspace: fake.scene.guildId };
    const made = await createSchedule(
      h.app.pool,
      { maxPerPerson: 20, minIntervalSeconds: 300 },
      recordScheduleEvent(h.app.pool),
      {
        id: randomUUID(),
        owner: { platform: 'discord', userId: owner.id, workspace: fake.scene.guildId, groups: [role] },
        place,
        conversationId: `discord:${randomUUID()}`,
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

  it('pauses the schedule of an owner whose role was taken away since it was made', async () => {
    const schedule = await make(rita, '2046-01-01T00:00:00Z');
    fake.world.memberRoles.set(rita.id, []);
    await tick(deps, new Date('2046-01-01T01:00:10Z'));
    expect((await recentRuns(h.app.pool, schedule.id))[0]).toMatchObject({ outcome: 'refused', work_item_id: null });
    expect(await findSchedule(h.app.pool, schedule.id)).toMatchObject({
      status: 'paused',
      paused_reason: expect.stringMatching(/Only on-call may use me/),
    });
  });

  it('pauses the schedule of an owner who left the server', async () => {
    const schedule = await make(gus, '2047-01-01T00:00:00Z');
    fake.world.otherMembers.delete(gus.id);
    await tick(deps, new Date('2047-01-01T01:00:10Z'));
    expect(await findSchedule(h.app.pool, schedule.id)).toMatchObject({
      status: 'paused',
      paused_reason: expect.stringMatching(/no longer a member there/),
    });
  });
});
