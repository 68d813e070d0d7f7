import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pressButton, type ButtonSurface } from '../../src/approval/press-button.ts';
import { scheduleButtonValue } from '../../src/core/buttons.ts';
import type { Requester } from '../../src/core/person.ts';
import { createSchedule } from '../../src/schedules/manage.ts';
import { findSchedule } from '../../src/schedules/store.ts';
import { recordScheduleEvent, scheduleVerbs } from '../../src/wiring/schedules.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

const alice: Requester = { platform: 'test', userId: 'U1' }; // the owner
const bob: Requester = { platform: 'test', userId: 'U2' }; // listed in APPROVERS
const mallory: Requester = { platform: 'test', userId: 'U666' }; // nobody

describe('schedule buttons', () => {
  let h: Harness;
  let said: Array<{ to: string; text: string }>;
  beforeAll(async () => {
    h = await startHarness({ env: { APPROVERS: 'test:U2' } });
  });
  afterAll(() => h.stop());

  async function schedule(channel: string) {
    const made = await createSchedule(
      h.app.pool,
      { maxPerPerson: 20, minIntervalSeconds: 300 },
      recordScheduleEvent(h.app.pool),
      {
        id: randomUUID(),
        owner: alice,
        place: { platform: 'test', channel },
        conversationId: channel,
        when: 'every 1h',
        task: 'check the deploy',
        background: false,
        catchUp: 'latest',
      },
      new Date(),
    );
    if (!made.ok) throw new Error(made.message);
    return made.schedule;
  }

  /** Presses a button as `by` through the one button dispatch; what only the presser is told is kept. */
  async function press(value: string, by: Requester) {
    said = [];
    const verbs = scheduleVerbs(h.config, h.app.pool, h.app.approvals);
    const surface: ButtonSurface = {
      openDenyForm: async () => undefined,
      showFullArguments: async () => undefined,
      tellClicker: async (text) => {
        said.push({ to: by.userId, text });
      },
    };
    await pressButton(
      {
        approvals: h.app.approvals,
        recordFeedback: async () => ({ ok: false, reason: 'no' }),
        stopTurn: async () => ({ ok: false, reason: 'no' }),
        changeSchedule: verbs.changeSchedule,
      },
      value,
      by,
      surface,
    );
    return said;
  }

  it('refuses a stranger privately and changes nothing', async () => {
    const s = await schedule('btn-stranger');
    expect(await press(scheduleButtonValue('delete', s.id), mallory)).toEqual([
      { to: 'U666', text: expect.stringMatching(/Only test:U1 or an approver may change/) },
    ]);
    expect(await findSchedule(h.app.pool, s.id)).toMatchObject({ status: 'active' });
  });

  it('lets the owner pause and an approver resume and delete', async () => {
    const s = await schedule('btn-owner');
    expect((await press(scheduleButtonValue('pause', s.id), alice))[0]?.text).toMatch(/is paused/);
    expect(await findSchedule(h.app.pool, s.id)).toMatchObject({ status: 'paused' });
    expect((await press(scheduleButtonValue('resume', s.id), bob))[0]?.text).toMatch(/runs again/);
    expect((await press(scheduleButtonValue('delete', s.id), bob))[0]?.text).toMatch(/is deleted/);
    expect(await findSchedule(h.app.pool, s.id)).toBeUndefined();
  });

  it('refuses a forged value as no schedule button, and an unknown schedule by name', async () => {
    const s = await schedule('btn-forged');
    // Not our format: handed to the approval service, which refuses it as a card click.
    expect(await press(`schedule:drop:${s.id}`, alice)).toEqual([{ to: 'U1', text: expect.any(String) }]);
    expect(await press(`schedule:delete:${s.id};DROP`, alice)).toHaveLength(1);
    expect(await findSchedule(h.app.pool, s.id)).toMatchObject({ status: 'active' });
    expect((await press(scheduleButtonValue('delete', randomUUID()), bob))[0]?.text).toMatch(/There is no schedule/);
  });

  it('lists an owner’s own schedules, and an approver everyone’s in the channel', async () => {
    const s = await schedule('btn-list');
    const verbs = scheduleVerbs(h.config, h.app.pool, h.app.approvals);
    const place = { platform: 'test', channel: 'btn-list' };
    expect((await verbs.schedules(bob, place)).entries.map((e) => e.id)).toContain(s.id);
    expect((await verbs.schedules(mallory, place)).entries).toEqual([]);
    expect((await verbs.schedules(alice, place)).entries.map((e) => e.id)).toContain(s.id);
  });
  it('lists a person’s own schedules, never a same-id lookalike’s from another workspace', async () => {
    const owner: Requester = { platform: 'test', userId: 'U7', workspace: 'T0HOME' };
    const lookalike: Requester = { platform: 'test', userId: 'U7', workspace: 'T0OTHER' };
    const made = await createSchedule(
      h.app.pool,
      { maxPerPerson: 20, minIntervalSeconds: 300 },
      recordScheduleEvent(h.app.pool),
      {
        id: randomUUID(),
        owner,
        place: { platform: 'test', channel: 'lookalike-check' },
        conversationId: 'lookalike-check',
        when: 'every 1h',
        task: 'read the home workspace’s incidents',
        background: false,
        catchUp: 'latest',
      },
      new Date(),
    );
    if (!made.ok) throw new Error(made.message);
    const { schedules } = scheduleVerbs(h.config, h.app.pool, h.app.approvals);
    const place = { platform: 'test', channel: 'elsewhere' };
    expect((await schedules(owner, place)).entries.map((e) => e.id)).toContain(made.schedule.id);
    expect((await schedules(lookalike, place)).entries.map((e) => e.id)).not.toContain(made.schedule.id);
  });
});
