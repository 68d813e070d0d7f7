/**
 * A free Slack workspace has no user groups: usergroups.list answers `paid_teams_only`. Where the
 * policy names no user group, nobody's groups can change a decision, so neither a message nor a
 * scheduled run lists them (issue 48); where it names one, the answer means "in no group" for
 * both alike, never a failed lookup.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { appMention, eventCallback, eventsApiEnvelope } from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { createWebClient, SlackOutbound } from '../../../src/adapters/slack/outbound.ts';
import { RateBuckets } from '../../../src/reply/rate-bucket.ts';
import { OutboundRegistry } from '../../../src/reply/outbound.ts';
import type { Requester } from '../../../src/core/person.ts';
import type { ReplyTarget } from '../../../src/core/reply-target.ts';
import { createSchedule } from '../../../src/schedules/manage.ts';
import { tick } from '../../../src/schedules/scheduler.ts';
import { deleteSchedule, recentRuns } from '../../../src/schedules/store.ts';
import { recordScheduleEvent, schedulerDeps } from '../../../src/wiring/schedules.ts';

const CHANNEL = 'C0OPS00001';
const ALICE = 'U0ALICE001';

describe('a Slack workspace without user groups (paid_teams_only)', () => {
  let fake: FakeSlack;
  let h: Harness;
  let dir: string;
  let policy: string;
  let outbounds: OutboundRegistry;

  const listings = () => fake.rateLimits.calls.filter((c) => c.method === 'usergroups.list').length;
  const writePolicy = (allow: string) =>
    writeFileSync(
      policy,
      ['version: 1', `workspaces: [slack:${fake.team}]`, 'requesters:', `  allow: [${allow}]`].join('\n'),
    );

  beforeAll(async () => {
    fake = await FakeSlack.start();
    // Every listing, as a free workspace answers it.
    fake.failNext('usergroups.list', { error: 'paid_teams_only' }, 10_000);
    dir = mkdtempSync(path.join(tmpdir(), 'cs-no-groups-'));
    policy = path.join(dir, 'policy.yaml');
    writePolicy(`slack:${fake.team}:*`);
    h = await startHarness({
      script: { rules: [{ rounds: [{ text: 'answered' }] }] },
      env: { ...fake.env({ SLACK_STREAMING: 'off' }), POLICY_FILE: policy },
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
    outbounds = new OutboundRegistry();
    outbounds.register(
      new SlackOutbound(createWebClient(fake.botToken, fake.apiUrl), new RateBuckets(h.app.pool), 50, undefined, {
        groupsFreshForMs: 0,
      }),
    );
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function mentionAnswered(): Promise<void> {
    const event = appMention({ user: ALICE, channel: CHANNEL, text: 'hello' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, event)));
    await waitFor(
      async () => (fake.textIn(CHANNEL, event.ts).some((t) => t.includes('answered')) ? true : undefined),
      15_000,
      'the answer',
    );
  }

  async function scheduledRun(start: string) {
    const owner: Requester = { platform: 'slack', userId: ALICE, workspace: fake.team };
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
    const deps = schedulerDeps({ pool: h.app.pool, log: h.app.log, approvals: h.app.approvals, outbounds });
    await tick(deps, new Date(new Date(start).getTime() + 3_600_000 + 10_000));
    const [run] = await recentRuns(h.app.pool, made.schedule.id);
    await deleteSchedule(h.app.pool, made.schedule.id);
    return run;
  }

  it('answers a message without listing user groups when the policy names none', async () => {
    const before = listings();
    await mentionAnswered();
    expect(listings() - before).toBe(0);
  });

  it('runs a schedule without listing user groups when the policy names none', async () => {
    const before = listings();
    const run = await scheduledRun('2050-01-01T00:00:00Z');
    expect(run).toMatchObject({ outcome: 'running' });
    expect(listings() - before).toBe(0);
  });

  it('takes paid_teams_only as "in no group" for a message and a scheduled run alike', async () => {
    // Now the policy lets a user group in beside everyone in the workspace: groups matter and are listed.
    writePolicy(`slack:${fake.team}:*, slack-usergroup:S0ONCALL01`);
    await waitFor(async () => (h.app.approvals.namesGroups('slack') ? true : undefined), 10_000, 'the policy reloaded');
    const before = listings();
    await mentionAnswered();
    const run = await scheduledRun('2051-01-01T00:00:00Z');
    // Not a failed lookup: the run goes ahead as someone in no group.
    expect(run).toMatchObject({ outcome: 'running' });
    expect(listings()).toBeGreaterThan(before);
  });
});
