import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { personKey, type Requester } from '../../src/core/person.ts';
import { changeSchedule, ownerKeyOf } from '../../src/schedules/manage.ts';
import { listSchedules } from '../../src/schedules/store.ts';
import { recordScheduleEvent } from '../../src/wiring/schedules.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';

const script: Script = {
  rules: [
    {
      match: 'remind me',
      rounds: [
        {
          toolCalls: [
            { name: 'schedule_task', args: { when: '0 9 * * 1-5 Europe/Berlin', task: 'summarise incidents' } },
          ],
        },
        { text: 'Done: {{lastToolResult}}' },
      ],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const alice: Requester = { platform: 'test', userId: 'U1' }; // the requester of every harness turn
const bob: Requester = { platform: 'test', userId: 'U2' }; // an approver
const mallory: Requester = { platform: 'test', userId: 'U666' }; // nobody

describe('schedule_task', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ script, env: { APPROVERS: 'test:U2' } });
  });
  afterAll(() => h.stop());

  it('shows WHEN, the next three runs and the task on a card before the schedule exists', async () => {
    const item = await h.say('sched-card', 'remind me every weekday');
    expect((await h.settled(item.id)).status).toBe('awaiting_approval');
    const envelope = await waitFor(
      async () => {
        const { rows } = await h.app.pool.query(
          `SELECT nonce, card_message_id FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
          [item.id],
        );
        return rows[0] as { nonce: string; card_message_id: string } | undefined;
      },
      10_000,
      'the card',
    );
    const card = h.outbound.messages.get(envelope.card_message_id)!.text;
    expect(card).toContain('Schedule: 0 9 * * 1-5 Europe/Berlin');
    expect(card.match(/• \w{3}, \d{4}-\d{2}-\d{2}, 09:00 Europe\/Berlin \(GMT\+[12]\)/g)).toHaveLength(3);
    expect(card).toContain('Task: summarise incidents');
    expect(await listSchedules(h.app.pool, { ownerKey: ownerKeyOf(alice) })).toEqual([]);

    expect((await h.app.approvals.click(`${envelope.nonce}.A`, alice)).ok).toBe(true);
    const [made] = await waitFor(
      async () => {
        const found = await listSchedules(h.app.pool, { ownerKey: ownerKeyOf(alice) });
        return found.length ? found : undefined;
      },
      20_000,
      'the schedule',
    );
    expect(made).toMatchObject({
      owner: alice,
      place: { platform: 'test', channel: 'sched-card' },
      kind: 'cron',
      task: 'summarise incidents',
      status: 'active',
    });
  });

  it('lets only the owner or an approver pause, resume or delete a schedule', async () => {
    const [schedule] = await listSchedules(h.app.pool, { ownerKey: ownerKeyOf(alice) });
    const record = recordScheduleEvent(h.app.pool);
    const isApprover = (person: Requester) => h.config.APPROVERS.includes(personKey(person));
    const as = (person: Requester) => ({ person, isApprover });
    const now = new Date();
    const refused = await changeSchedule(h.app.pool, record, 'delete', schedule!.id, as(mallory), now);
    expect(refused).toMatchObject({ ok: false, reason: expect.stringMatching(/Only test:U1 or an approver/) });
    expect(await changeSchedule(h.app.pool, record, 'pause', schedule!.id, as(alice), now)).toMatchObject({ ok: true });
    expect(await changeSchedule(h.app.pool, record, 'resume', schedule!.id, as(bob), now)).toMatchObject({ ok: true });
    expect(await changeSchedule(h.app.pool, record, 'delete', schedule!.id, as(bob), now)).toMatchObject({ ok: true });
    expect(await listSchedules(h.app.pool, { ownerKey: ownerKeyOf(alice) })).toEqual([]);
    const { rows } = await h.app.pool.query(
      `SELECT event, actor->>'userId' AS who FROM countersign.approval_audit WHERE detail->>'schedule' = $1 ORDER BY id`,
      [schedule!.id],
    );
    expect(rows).toEqual([
      { event: 'schedule_created', who: 'U1' },
      { event: 'schedule_paused', who: 'U1' },
      { event: 'schedule_resumed', who: 'U2' },
      { event: 'schedule_deleted', who: 'U2' },
    ]);
  });
});
