import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { defineTool } from '../../src/agent/tools/tool.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';
import type { WorkItem } from '../../src/core/work-item.ts';

/** A risky tool whose every run is counted, so "ran once" and "never ran" are observable. */
const runs: string[] = [];
const deployTool = defineTool({
  name: 'deploy_service',
  description: 'Deploys a service to production.',
  version: '1',
  input: z.object({ service: z.string() }),
  approval: 'always',
  risk: (args) => (args.service === 'db' ? 'high' : 'medium'),
  idempotent: false,
  async execute({ service }) {
    runs.push(service);
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
            { name: 'current_time', args: {} },
          ],
        },
        { text: 'Results: {{lastToolResult}}' },
      ],
    },
    {
      match: '^deploy (\\w+)',
      rounds: [
        { text: 'Deploying.', toolCalls: [{ name: 'deploy_service', args: { service: 'api' } }] },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    {
      match: '^ask',
      rounds: [
        { toolCalls: [{ name: 'request_human_approval', args: { question: 'Which region?', options: ['eu', 'us'] } }] },
        { text: 'Going with: {{lastToolResult}}' },
      ],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const alice = { platform: 'test', userId: 'U1' }; // the requester in every harness turn
const bob = { platform: 'test', userId: 'U2' }; // listed in APPROVERS
const mallory = { platform: 'test', userId: 'U666' }; // nobody

describe('approvals', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ script, env: { APPROVERS: 'test:U2' } });
    h.app.tools.add(deployTool);
  });
  afterAll(() => h.stop());

  async function parked(item: WorkItem) {
    const settled = await h.settled(item.id);
    expect(settled.status).toBe('awaiting_approval');
    return waitFor(
      async () => {
        const { rows } = await h.app.pool.query(
          `SELECT id, nonce, calls, card_message_id FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
          [item.id],
        );
        return rows[0] as { id: string; nonce: string; calls: string; card_message_id: string } | undefined;
      },
      10_000,
      'the approval card',
    );
  }

  const card = (messageId: string) => h.outbound.messages.get(messageId)!;
  const auditEvents = async (envelopeId: string) =>
    (
      await h.app.pool.query(
        `SELECT event, reason FROM countersign.approval_audit WHERE envelope_id = $1 ORDER BY id`,
        [envelopeId],
      )
    ).rows as Array<{ event: string; reason: string | null }>;

  it('shows a card with the call, its risk, the plan hash prefix and Approve/Deny buttons', async () => {
    const item = await h.say('ap-card', 'deploy api');
    const envelope = await parked(item);
    const shown = card(envelope.card_message_id);
    expect(shown.text).toContain('`deploy_service`');
    expect(shown.text).toContain('"service": "api"');
    expect(shown.text).toContain('risk 🟠 medium');
    expect(shown.text).toMatch(/plan [0-9a-f]{12} · expires /);
    // The built-in rule for this write asks, and an ask may become a standing grant.
    expect(shown.buttons?.map((b) => b.label)).toEqual(['Approve', 'Always allow here', 'Deny', 'Deny with reason…']);
    expect(shown.text).toContain('Always allow here: later `deploy_service` calls with exactly these arguments');
    for (const b of shown.buttons ?? []) expect(b.value.length).toBeLessThanOrEqual(100);
    expect(envelope.nonce).toMatch(/^[A-Za-z0-9_-]{32}$/);
  });

  it('runs an approved call once and finishes the turn', async () => {
    runs.length = 0;
    const item = await h.say('ap-approve', 'deploy api');
    const envelope = await parked(item);
    const approve = card(envelope.card_message_id).buttons!.find((b) => b.label === 'Approve')!;
    const result = await h.app.approvals.click(approve.value, bob);
    expect(result.ok).toBe(true);
    if (!result.ok || !('continuation' in result)) throw new Error('expected a continuation');
    const done = await h.settled(result.continuation.id);
    expect(done.status).toBe('done');
    expect(done.result?.text).toBe('Result: deployed api');
    expect(runs).toEqual(['api']);
    // The card was edited in place: who decided, and no buttons any more.
    const decided = card(envelope.card_message_id);
    expect(decided.text).toContain('approved by test:U2');
    expect(decided.buttons).toEqual([]);
    expect((await auditEvents(envelope.id)).map((a) => a.event)).toEqual([
      'requested',
      'click',
      'consumed',
      'executed',
    ]);
    // The conversation's history holds the whole turn, tool exchange included.
    const { rows } = await h.app.pool.query(
      `SELECT message->>'role' AS role FROM countersign.messages WHERE conversation_id = 'ap-approve' ORDER BY id`,
    );
    expect(rows.map((r) => r.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });

  it('gives a denied call a denial the model reads and answers', async () => {
    runs.length = 0;
    const item = await h.say('ap-deny', 'deploy api');
    const envelope = await parked(item);
    const deny = card(envelope.card_message_id).buttons!.find((b) => b.label === 'Deny')!;
    const result = await h.app.approvals.click(deny.value, alice);
    if (!result.ok || !('continuation' in result)) throw new Error('expected a continuation');
    const done = await h.settled(result.continuation.id);
    expect(done.result?.text).toMatch(/^Result: A person denied this call, so it was not run\./);
    expect(runs).toEqual([]);
    expect((await auditEvents(envelope.id)).map((a) => a.event)).toContain('denied');
  });

  it('lets exactly one of 100 concurrent submissions of one nonce through', async () => {
    runs.length = 0;
    const item = await h.say('ap-race', 'deploy api');
    const envelope = await parked(item);
    const approve = card(envelope.card_message_id).buttons!.find((b) => b.label === 'Approve')!;
    // The requester clicks (the tests below count bob's rejections, and this one spends alice's budget).
    const results = await Promise.all(Array.from({ length: 100 }, () => h.app.approvals.click(approve.value, alice)));
    const winners = results.filter((r) => r.ok);
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => !r.ok)).toHaveLength(99);
    const { rows } = await h.app.pool.query(
      `SELECT count(*)::int AS n FROM countersign.work_items WHERE item->'input'->'approval'->>'envelopeId' = $1`,
      [envelope.id],
    );
    expect(rows[0].n).toBe(1);
    const winner = winners[0]!;
    if (!('continuation' in winner)) throw new Error('expected a continuation');
    await h.settled(winner.continuation.id);
    expect(runs).toEqual(['api']);
    // Every loser is audited, up to the clicker's per-minute budget; the rest are counted there.
    const audits = await auditEvents(envelope.id);
    const budget = await h.app.pool.query(
      `SELECT coalesce(sum(written), 0)::int AS written, coalesce(sum(suppressed), 0)::int AS suppressed
       FROM countersign.approval_audit_budget WHERE actor = 'test:U1'`,
    );
    expect(audits.filter((a) => a.event === 'rejected')).toHaveLength(budget.rows[0].written);
    expect(budget.rows[0].written + budget.rows[0].suppressed).toBe(99);
  });

  it('rejects bad submissions before consuming the nonce, which stays usable', async () => {
    runs.length = 0;
    const item = await h.say('ap-bad', 'deploy api');
    const envelope = await parked(item);
    const [callId] = (JSON.parse(envelope.calls) as Array<{ id: string }>).map((c) => c.id);
    const cases: Array<[string, () => ReturnType<typeof h.app.approvals.click>, RegExp]> = [
      ['unknown nonce', () => h.app.approvals.click(`${'x'.repeat(32)}.A`, bob), /does not exist/],
      ['malformed payload', () => h.app.approvals.click('approve-everything', bob), /not a valid approval button/],
      ['clicker not allowed', () => h.app.approvals.click(`${envelope.nonce}.A`, mallory), /not allowed/],
      ['missing decision', () => h.app.approvals.submit(envelope.nonce, [], bob), /needs a decision/],
      [
        'extra decision',
        () =>
          h.app.approvals.submit(
            envelope.nonce,
            [
              { toolCallId: callId!, approved: true },
              { toolCallId: 'call_forged', approved: true },
            ],
            bob,
          ),
        /not requested/,
      ],
      [
        'duplicated decision',
        () =>
          h.app.approvals.submit(
            envelope.nonce,
            [
              { toolCallId: callId!, approved: true },
              { toolCallId: callId!, approved: false },
            ],
            bob,
          ),
        /decided twice/,
      ],
    ];
    for (const [name, attempt, reason] of cases) {
      const result = await attempt();
      expect(result.ok, name).toBe(false);
      if (!result.ok) expect(result.reason, name).toMatch(reason);
    }
    expect(runs).toEqual([]);
    // Still pending: a valid submission goes through.
    const ok = await h.app.approvals.submit(envelope.nonce, [{ toolCallId: callId!, approved: true }], bob);
    if (!ok.ok || !('continuation' in ok)) throw new Error('expected the valid submission to win');
    await h.settled(ok.continuation.id);
    expect(runs).toEqual(['api']);
    // ...and a replay of the consumed nonce is rejected.
    const replay = await h.app.approvals.click(`${envelope.nonce}.A`, bob);
    expect(replay).toEqual({ ok: false, reason: 'This request was already decided.' });
    const audits = await auditEvents(envelope.id);
    expect(audits.filter((a) => a.event === 'rejected').map((a) => a.reason)).toEqual([
      expect.stringMatching(/not allowed/),
      expect.stringMatching(/needs a decision/),
      expect.stringMatching(/not requested/),
      expect.stringMatching(/decided twice/),
      'This request was already decided.',
    ]);
    const orphan = await h.app.pool.query(
      `SELECT reason FROM countersign.approval_audit WHERE envelope_id IS NULL AND event = 'rejected'`,
    );
    expect(orphan.rows.map((r) => r.reason)).toEqual(
      expect.arrayContaining([expect.stringMatching(/does not exist/), 'malformed button payload']),
    );
  });

  it('rejects a click on an expired envelope and keeps the nonce unconsumed', async () => {
    const item = await h.say('ap-expired', 'deploy api');
    const envelope = await parked(item);
    await h.app.pool.query(
      `UPDATE countersign.approval_envelopes SET expires_at = now() - interval '1 second' WHERE id = $1`,
      [envelope.id],
    );
    const result = await h.app.approvals.click(`${envelope.nonce}.A`, bob);
    expect(result).toEqual({ ok: false, reason: expect.stringMatching(/has expired; nothing was run/) });
    const { rows } = await h.app.pool.query(`SELECT status FROM countersign.approval_envelopes WHERE id = $1`, [
      envelope.id,
    ]);
    expect(rows[0].status).toBe('pending');
  });

  it('refuses to run calls whose arguments were altered after the request (plan hash)', async () => {
    runs.length = 0;
    const item = await h.say('ap-tamper', 'deploy api');
    const envelope = await parked(item);
    await h.app.pool.query(
      `UPDATE countersign.approval_envelopes SET calls = replace(calls, '"service":"api"', '"service":"db"') WHERE id = $1`,
      [envelope.id],
    );
    const result = await h.app.approvals.click(`${envelope.nonce}.A`, bob);
    if (!result.ok || !('continuation' in result)) throw new Error('expected the click to be consumed');
    const done = await h.settled(result.continuation.id);
    expect(done.status).toBe('failed');
    expect(h.outbound.channelText('ap-tamper').at(-1)).toMatch(/plan hash mismatch/);
    expect(runs).toEqual([]);
    expect((await auditEvents(envelope.id)).map((a) => a.event)).toContain('refused');
  });

  it('is not refused when an unrelated tool appears between request and click', async () => {
    runs.length = 0;
    const item = await h.say('ap-unrelated', 'deploy api');
    const envelope = await parked(item);
    h.app.tools.add(
      defineTool({
        name: 'new_tool',
        description: 'appeared after the request',
        version: '1',
        input: z.object({}),
        approval: 'never',
        risk: 'low',
        idempotent: true,
        execute: async () => 'x',
      }),
    );
    const result = await h.app.approvals.click(`${envelope.nonce}.A`, bob);
    if (!result.ok || !('continuation' in result)) throw new Error('expected the click to be consumed');
    expect((await h.settled(result.continuation.id)).status).toBe('done');
    expect(runs).toEqual(['api']);
  });

  it('refuses to run calls when a tool they use changed between request and click (scope drift)', async () => {
    runs.length = 0;
    const item = await h.say('ap-drift', 'deploy api');
    const envelope = await parked(item);
    // The same tool, in a new version: what was approved is not what would run.
    h.app.tools.upsert({ ...deployTool, version: '2' });
    const result = await h.app.approvals.click(`${envelope.nonce}.A`, bob);
    if (!result.ok || !('continuation' in result)) throw new Error('expected the click to be consumed');
    const done = await h.settled(result.continuation.id);
    expect(done.status).toBe('failed');
    expect(h.outbound.channelText('ap-drift').at(-1)).toMatch(/changed since the request \(tools\)/);
    expect(runs).toEqual([]);
    h.app.tools.upsert(deployTool);
    expect((await auditEvents(envelope.id)).find((a) => a.event === 'refused')?.reason).toMatch(/tools/);
  });
});

describe('approvals with several calls, questions and the two-person rule', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ script, env: { APPROVERS: 'test:U2', APPROVAL_TWO_PERSON_RULE: 'true' } });
    h.app.tools.add(
      defineTool({
        ...deployTool,
        risk: (args: { service: string }) => (args.service === 'worker' ? 'high' : 'medium'),
      }),
    );
  });
  afterAll(() => h.stop());

  async function cardOf(item: WorkItem) {
    expect((await h.settled(item.id)).status).toBe('awaiting_approval');
    return waitFor(
      async () => {
        const { rows } = await h.app.pool.query(
          `SELECT id, nonce, card_message_id FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
          [item.id],
        );
        return rows[0] as { id: string; nonce: string; card_message_id: string } | undefined;
      },
      10_000,
      'the card',
    );
  }

  it('runs calls that need no approval first and collects one decision per call', async () => {
    runs.length = 0;
    const item = await h.say('multi', 'deploy two');
    const envelope = await cardOf(item);
    // current_time needed no approval and already ran; the card lists only the two deploys.
    const exec = await h.app.pool.query(`SELECT tool FROM countersign.tool_executions WHERE work_item_id = $1`, [
      item.id,
    ]);
    expect(exec.rows.map((r) => r.tool)).toEqual(['current_time']);
    const buttons = () => h.outbound.messages.get(envelope.card_message_id)!.buttons!.map((b) => b.label);
    // Call 2 (high risk) needs a countersignature, which the built-in rules never make grantable.
    expect(buttons()).toEqual([
      'Approve 1',
      'Always allow 1 here',
      'Deny 1',
      'Approve 2',
      'Deny 2',
      'Approve all',
      'Deny all',
      'Deny with reason…',
    ]);

    // The requester may not approve their own high-risk call (deploying "worker")...
    const own = await h.app.approvals.click(`${envelope.nonce}.a1`, { platform: 'test', userId: 'U1' });
    expect(own).toEqual({ ok: false, reason: expect.stringMatching(/two-person rule/) });
    // ...but may approve the medium one; an approver denies the other.
    const first = await h.app.approvals.click(`${envelope.nonce}.a0`, { platform: 'test', userId: 'U1' });
    expect(first).toMatchObject({ ok: true, partial: true });
    expect(buttons()).toEqual(['Approve 2', 'Deny 2', 'Approve all', 'Deny all', 'Deny with reason…']);
    const second = await h.app.approvals.click(`${envelope.nonce}.d1`, bob);
    if (!second.ok || !('continuation' in second)) throw new Error('expected the last decision to consume');
    const done = await h.settled(second.continuation.id);
    expect(done.status).toBe('done');
    expect(runs).toEqual(['web']);
    expect(done.result?.text).toMatch(/A person denied this call/);
  });

  it('asks a person a question and returns the chosen option as the tool result', async () => {
    const item = await h.say('question', 'ask me');
    const envelope = await cardOf(item);
    const shown = h.outbound.messages.get(envelope.card_message_id)!;
    expect(shown.text).toContain('Which region?');
    expect(shown.buttons?.map((b) => b.label)).toEqual(['eu', 'us']);
    const result = await h.app.approvals.click(shown.buttons![1]!.value, bob);
    if (!result.ok || !('continuation' in result)) throw new Error('expected a continuation');
    const done = await h.settled(result.continuation.id);
    expect(done.result?.text).toBe('Going with: The person answered: us');
    const audit = await h.app.pool.query(
      `SELECT event FROM countersign.approval_audit WHERE envelope_id = $1 ORDER BY id`,
      [envelope.id],
    );
    expect(audit.rows.map((r) => r.event)).toEqual(['requested', 'click', 'consumed', 'answered']);
  });

  it('expires stale envelopes from the housekeeping job: card updated, turn ended, nothing run', async () => {
    runs.length = 0;
    const item = await h.say('expiry', 'deploy api');
    const envelope = await cardOf(item);
    await h.app.pool.query(
      `UPDATE countersign.approval_envelopes SET expires_at = now() - interval '1 second' WHERE id = $1`,
      [envelope.id],
    );
    await h.app.pool.query(`SELECT graphile_worker.add_job('countersign_housekeeping', '{}'::json, priority => 10000)`);
    await waitFor(
      async () => {
        const { rows } = await h.app.pool.query(`SELECT status FROM countersign.work_items WHERE id = $1`, [item.id]);
        return rows[0].status === 'cancelled' ? true : undefined;
      },
      20_000,
      'the parked turn to be cancelled',
    );
    expect(h.outbound.messages.get(envelope.card_message_id)!.text).toContain('Expired — nothing was run.');
    expect(h.outbound.messages.get(envelope.card_message_id)!.buttons).toEqual([]);
    expect(h.outbound.channelText('expiry').at(-1)).toMatch(/expired before anyone decided/);
    const late = await h.app.approvals.click(`${envelope.nonce}.A`, bob);
    expect(late.ok).toBe(false);
    expect(runs).toEqual([]);
  });
});
