import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { defineTool } from '../../src/agent/tools/tool.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';
import type { WorkItem } from '../../src/core/work-item.ts';
import { REJECTION_AUDITS_PER_MINUTE } from '../../src/approval/service.ts';

/** Every run is recorded with the conversation it belongs to, so "never ran" is observable per turn. */
const runs: Array<{ conversation: string; service: string }> = [];
const deployTool = defineTool({
  name: 'deploy_service',
  description: 'Deploys a service to production.',
  version: '1',
  input: z.object({ service: z.string() }),
  approval: 'always',
  // "worker" is the high-risk call of the pair: under the two-person rule the requester may not approve it.
  risk: (args) => (args.service === 'worker' ? 'high' : 'medium'),
  idempotent: false,
  async execute({ service }, ctx) {
    runs.push({ conversation: ctx.conversationId, service });
    return `deployed ${service}`;
  },
});

const script: Script = {
  rules: [
    {
      match: '^deploy two',
      rounds: [
        {
          text: 'Deploying both.',
          toolCalls: [
            { name: 'deploy_service', args: { service: 'web' } },
            { name: 'deploy_service', args: { service: 'worker' } },
          ],
        },
        { text: 'Done.' },
      ],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const requester = { platform: 'test', userId: 'U1' }; // every harness turn is asked by U1
const approver = { platform: 'test', userId: 'U2' }; // listed in APPROVERS
const forger = { platform: 'test', userId: 'U666' };

describe('decisions on a multi-call card (two-person rule)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      script,
      tools: [deployTool],
      env: { APPROVERS: 'test:U2', APPROVAL_TWO_PERSON_RULE: 'true' },
    });
  });
  afterAll(() => h.stop());

  async function cardOf(item: WorkItem) {
    expect((await h.settled(item.id)).status).toBe('awaiting_approval');
    return waitFor(
      async () => {
        const { rows } = await h.app.pool.query(
          `SELECT id, nonce, calls, card_message_id FROM countersign.approval_envelopes
           WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
          [item.id],
        );
        return rows[0] as { id: string; nonce: string; calls: string; card_message_id: string } | undefined;
      },
      10_000,
      'the card',
    );
  }

  const ran = (conversation: string) =>
    runs
      .filter((r) => r.conversation === conversation)
      .map((r) => r.service)
      .sort();

  it('completes when an approver approved the high-risk call and the requester decides the other one', async () => {
    const item = await h.say('stuck', 'deploy two');
    const envelope = await cardOf(item);
    const byApprover = await h.app.approvals.click(`${envelope.nonce}.a1`, approver);
    expect(byApprover).toMatchObject({ ok: true, partial: true });
    // The approver's earlier approval is theirs, not the requester's: the requester's last click completes it.
    const byRequester = await h.app.approvals.click(`${envelope.nonce}.a0`, requester);
    if (!byRequester.ok || !('continuation' in byRequester)) {
      throw new Error(`expected the last decision to consume, got ${JSON.stringify(byRequester)}`);
    }
    expect((await h.settled(byRequester.continuation.id)).status).toBe('done');
    expect(ran('stuck')).toEqual(['web', 'worker']);
    // The card says who decided which call.
    const card = h.outbound.messages.get(envelope.card_message_id)!;
    expect(card.text).toMatch(/1\. `deploy_service` approved by test:U1/);
    expect(card.text).toMatch(/2\. `deploy_service` approved by test:U2/);
  });

  it('completes when the requester then clicks Approve all for the rest', async () => {
    const item = await h.say('stuck-all', 'deploy two');
    const envelope = await cardOf(item);
    expect(await h.app.approvals.click(`${envelope.nonce}.a1`, approver)).toMatchObject({ ok: true, partial: true });
    const all = await h.app.approvals.click(`${envelope.nonce}.A`, requester);
    if (!all.ok || !('continuation' in all)) throw new Error(`expected Approve all to consume: ${JSON.stringify(all)}`);
    await h.settled(all.continuation.id);
    expect(ran('stuck-all')).toEqual(['web', 'worker']);
  });

  it('never changes a recorded decision: a contradicting click or submission is refused with the reason', async () => {
    const item = await h.say('monotonic', 'deploy two');
    const envelope = await cardOf(item);
    const [web, worker] = (JSON.parse(envelope.calls) as Array<{ id: string }>).map((c) => c.id);
    expect(await h.app.approvals.click(`${envelope.nonce}.d0`, requester)).toMatchObject({ ok: true, partial: true });

    const flip = await h.app.approvals.click(`${envelope.nonce}.a0`, approver);
    expect(flip).toEqual({ ok: false, reason: expect.stringMatching(/Call 1 was already denied by test:U1/) });
    // A full submission built from a stale card may not override it either.
    const stale = await h.app.approvals.submit(
      envelope.nonce,
      [
        { toolCallId: web!, approved: true },
        { toolCallId: worker!, approved: true },
      ],
      approver,
    );
    expect(stale).toEqual({ ok: false, reason: expect.stringMatching(/Call 1 was already denied by test:U1/) });

    // The request is still open, and agreeing with the record completes it.
    const agreeing = await h.app.approvals.submit(
      envelope.nonce,
      [
        { toolCallId: web!, approved: false },
        { toolCallId: worker!, approved: true },
      ],
      approver,
    );
    if (!agreeing.ok || !('continuation' in agreeing)) throw new Error('expected the agreeing submission to consume');
    await h.settled(agreeing.continuation.id);
    expect(ran('monotonic')).toEqual(['worker']);
  });

  it('never runs a call someone denied while another person clicked Approve all at the same moment', async () => {
    const iterations = 25;
    let denialsRecorded = 0;
    for (let i = 0; i < iterations; i++) {
      const conversation = `race-${i}`;
      const item = await h.say(conversation, 'deploy two');
      const envelope = await cardOf(item);
      const [deny, approveAll] = await Promise.all([
        h.app.approvals.click(`${envelope.nonce}.d0`, requester),
        h.app.approvals.click(`${envelope.nonce}.A`, approver),
      ]);
      // Approve all always completes the request: first, or after the denial, for the call left.
      if (!approveAll.ok || !('continuation' in approveAll)) {
        throw new Error(`iteration ${i}: expected Approve all to consume, got ${JSON.stringify(approveAll)}`);
      }
      await h.settled(approveAll.continuation.id);
      const { rows } = await h.app.pool.query(
        `SELECT decisions FROM countersign.approval_envelopes WHERE id = $1 AND status = 'consumed'`,
        [envelope.id],
      );
      const webDecision = (rows[0].decisions as Array<{ approved: boolean }>)[0];
      if (deny.ok) {
        // The denial was recorded, so it is what the consumed decisions say, and the call did not run.
        denialsRecorded += 1;
        expect(webDecision?.approved, `iteration ${i}`).toBe(false);
        expect(ran(conversation), `iteration ${i}`).toEqual(['worker']);
      } else {
        // Approve all won before the denial was recorded: the denial was refused, not silently lost.
        expect(deny.reason, `iteration ${i}`).toMatch(/already decided/);
        expect(ran(conversation), `iteration ${i}`).toEqual(['web', 'worker']);
      }
    }
    // Both orders happen; a loop that only ever saw one would not test the race.
    expect(denialsRecorded).toBeGreaterThan(0);
  });
});

describe('audit of rejected clicks', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ script, tools: [deployTool], env: { APPROVERS: 'test:U2' } });
  });
  afterAll(() => h.stop());

  it('rejects every one of 1,000 forged clicks from one person and writes a bounded number of audit rows', async () => {
    const forged = Array.from({ length: 1000 }, () => `${randomBytes(24).toString('base64url')}.A`);
    const results = await Promise.all(forged.map((value) => h.app.approvals.click(value, forger)));
    for (const r of results) expect(r).toEqual({ ok: false, reason: expect.stringMatching(/does not exist/) });

    const { rows } = await h.app.pool.query(
      `SELECT count(*)::int AS n FROM countersign.approval_audit WHERE actor = $1::jsonb`,
      [JSON.stringify(forger)],
    );
    const written = rows[0].n as number;
    // The rest are summarised per clicker and minute (by the database's clock), not dropped silently.
    const budget = await h.app.pool.query(
      `SELECT written, suppressed FROM countersign.approval_audit_budget WHERE actor = $1`,
      ['test:U666'],
    );
    const windows = budget.rows as Array<{ written: number; suppressed: number }>;
    for (const w of windows) expect(w.written).toBeLessThanOrEqual(REJECTION_AUDITS_PER_MINUTE);
    expect(written).toBe(windows.reduce((sum, w) => sum + w.written, 0));
    expect(written + windows.reduce((sum, w) => sum + w.suppressed, 0)).toBe(1000);
    expect(written).toBeLessThanOrEqual(REJECTION_AUDITS_PER_MINUTE * windows.length);
  });

  it('still audits another person’s rejection while one clicker is over their budget', async () => {
    const result = await h.app.approvals.click(`${randomBytes(24).toString('base64url')}.A`, approver);
    expect(result.ok).toBe(false);
    const { rows } = await h.app.pool.query(
      `SELECT reason FROM countersign.approval_audit WHERE actor = $1::jsonb AND event = 'rejected'`,
      [JSON.stringify(approver)],
    );
    expect(rows.map((r) => r.reason)).toEqual([expect.stringMatching(/does not exist/)]);
  });
});
