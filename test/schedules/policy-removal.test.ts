import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Requester } from '../../src/core/person.ts';
import type { ReplyTarget } from '../../src/core/reply-target.ts';
import { createSchedule } from '../../src/schedules/manage.ts';
import { tick, type SchedulerDeps } from '../../src/schedules/scheduler.ts';
import { findSchedule, recentRuns } from '../../src/schedules/store.ts';
import { recordScheduleEvent } from '../../src/wiring/schedules.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';

const HOME = 'T0HOME0001';
const owner: Requester = { platform: 'slack', userId: 'U0GONE0001', workspace: HOME };
const place: ReplyTarget = { platform: 'slack', channel: 'C0OPS00001', workspace: HOME };

describe('an owner removed from the policy', () => {
  let h: Harness;
  let policyFile: string;
  beforeAll(async () => {
    policyFile = path.join(mkdtempSync(path.join(tmpdir(), 'cs-policy-')), 'policy.yaml');
    writeFileSync(policyFile, `version: 1\nworkspaces: [slack:${HOME}]\n`);
    h = await startHarness({ env: { POLICY_FILE: policyFile } });
  });
  afterAll(() => h.stop());

  it('pauses the schedule at its next run, which makes no work item, and the owner is told', async () => {
    const made = await createSchedule(
      h.app.pool,
      { maxPerPerson: 20, minIntervalSeconds: 300 },
      recordScheduleEvent(h.app.pool),
      {
        id: randomUUID(),
        owner,
        place,
        conversationId: 'removal',
        when: 'every 1h',
        task: 'summarise',
        background: false,
        catchUp: 'latest',
      },
      new Date('2043-01-01T00:00:00Z'),
    );
    if (!made.ok) throw new Error(made.message);
    expect(h.app.approvals.mayUse(owner, place).ok).toBe(true);

    writeFileSync(
      policyFile,
      `version: 1\nworkspaces: [slack:${HOME}]\nrequesters:\n  deny: [slack:U0GONE0001]\n  refusal: "You may no longer use me."\n`,
    );
    await waitFor(
      async () => (h.app.approvals.mayUse(owner, place).ok ? undefined : true),
      10_000,
      'the policy file to be read again',
    );
    const told: string[] = [];
    const deps: SchedulerDeps = {
      pool: h.app.pool,
      log: h.app.log,
      mayUse: (who, where) => h.app.approvals.mayUse(who, where),
      tell: async (_where, text) => {
        told.push(text);
      },
      record: recordScheduleEvent(h.app.pool),
    };
    await tick(deps, new Date('2043-01-01T01:00:05Z'));
    expect(await findSchedule(h.app.pool, made.schedule.id)).toMatchObject({ status: 'paused' });
    expect((await recentRuns(h.app.pool, made.schedule.id))[0]).toMatchObject({
      outcome: 'refused',
      work_item_id: null,
    });
    expect(told).toEqual([
      expect.stringMatching(/paused: slack:U0GONE0001 may no longer use the bot here \(You may no longer use me\.\)/),
    ]);
  });
});
