import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';

/**
 * A newer message from the requester withdraws a pending card (docs/conversations.md): also one that
 * came while the model was still planning the calls, before the card existed; and what already ran
 * in the withdrawn turn stays in the history with its result.
 */
const script: Script = {
  rules: [
    {
      // The planning round streams for about a second and a half before it asks to deploy.
      match: '^deploy prod',
      rounds: [
        {
          text: 'Planning the production deploy, checking every step twice first.',
          chunkSize: 8,
          delayMs: 200,
          toolCalls: [{ name: 'run_command', args: { command: ['echo', 'deploy', 'prod'] } }],
        },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    {
      match: '^time then deploy',
      rounds: [
        {
          text: 'Checking the time, then deploying.',
          toolCalls: [
            { id: 'call-time', name: 'current_time', args: {} },
            { id: 'call-deploy', name: 'run_command', args: { command: ['echo', 'deploy', 'prod'] } },
          ],
        },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    { rounds: [{ text: 'ok: {{lastUser}}' }] },
  ],
};

describe('superseding a card', () => {
  let h: Harness;
  beforeAll(async () => (h = await startHarness({ script, env: { ENABLE_RUN_COMMAND: 'true' } })));
  afterAll(() => h.stop());

  const envelopeOf = async (workItemId: string) =>
    (
      await h.app.pool.query(`SELECT nonce, status FROM countersign.approval_envelopes WHERE work_item_id = $1`, [
        workItemId,
      ])
    ).rows[0] as { nonce: string; status: string } | undefined;

  it('withdraws a card whose correction came while the model was still planning it', async () => {
    const first = await h.say('planning', 'deploy prod', { mode: 'steer' });
    // The correction arrives while the planning round streams, before any card exists.
    await waitFor(
      async () => {
        const { rows } = await h.app.pool.query(`SELECT status FROM countersign.work_items WHERE id = $1`, [first.id]);
        return rows[0]?.status === 'running' ? true : undefined;
      },
      10_000,
      'the first turn to start',
    );
    const correction = await h.say('planning', 'no, staging', { mode: 'steer' });
    expect(await h.settled(first.id)).toMatchObject({ status: 'cancelled' });
    const envelope = await envelopeOf(first.id);
    expect(envelope?.status).toBe('superseded');
    const click = await h.app.approvals.click(`${envelope!.nonce}.A`, { platform: 'test', userId: 'U1' });
    expect(click).toEqual({ ok: false, reason: expect.stringMatching(/superseded/) });
    expect(await h.settled(correction.id)).toMatchObject({ status: 'done' });
    const ran = await h.app.pool.query(
      `SELECT count(*)::int AS n FROM countersign.tool_executions WHERE tool = 'run_command'`,
    );
    expect(ran.rows[0].n).toBe(0);
  });

  it("does not let someone else's message, sent while the model plans, withdraw the requester's card", async () => {
    const first = await h.say('planning-other', 'deploy prod', { mode: 'steer' });
    await waitFor(
      async () => {
        const { rows } = await h.app.pool.query(`SELECT status FROM countersign.work_items WHERE id = $1`, [first.id]);
        return rows[0]?.status === 'running' ? true : undefined;
      },
      10_000,
      'the first turn to start',
    );
    // Another person in the same conversation.
    await h.say('planning-other', 'no, staging', { mode: 'steer', requester: { platform: 'test', userId: 'U2' } });
    expect(await h.settled(first.id)).toMatchObject({ status: 'awaiting_approval' });
    expect((await envelopeOf(first.id))?.status).toBe('pending');
  });

  it('compares the whole account: the same user id vouched for by another workspace is someone else', async () => {
    // Which platforms scope ids to a workspace is each adapter's rule; SQL compares the workspace
    // always, as one account in one conversation always carries the same one.
    const owner = { platform: 'test', userId: 'U1', workspace: 'W1' };
    const lookalike = { platform: 'test', userId: 'U1', workspace: 'W2' };
    const first = await h.say('lookalike', 'time then deploy', { mode: 'steer', requester: owner });
    expect(await h.settled(first.id)).toMatchObject({ status: 'awaiting_approval' });
    const other = await h.say('lookalike', 'never mind', { mode: 'steer', requester: lookalike });
    await waitFor(
      async () => {
        const { rows } = await h.app.pool.query(`SELECT status FROM countersign.work_items WHERE id = $1`, [other.id]);
        return rows[0]?.status === 'queued' ? true : undefined;
      },
      10_000,
      'the other message to wait behind the parked turn',
    );
    expect((await envelopeOf(first.id))?.status).toBe('pending');
    expect(await h.settled(first.id)).toMatchObject({ status: 'awaiting_approval' });
  });

  it('keeps the calls that already ran, with their results, and names only the waiting ones as withdrawn', async () => {
    const first = await h.say('ran', 'time then deploy', { mode: 'steer' });
    expect(await h.settled(first.id)).toMatchObject({ status: 'awaiting_approval' });
    const correction = await h.say('ran', 'never mind', { mode: 'steer' });
    expect(await h.settled(first.id)).toMatchObject({ status: 'cancelled' });
    await h.settled(correction.id);
    const { rows } = await h.app.pool.query(
      `SELECT message FROM countersign.messages WHERE work_item_id = $1 ORDER BY id`,
      [first.id],
    );
    const history = rows.map((r) => r.message);
    const assistant = history.find((m) => m.role === 'assistant');
    expect(assistant.toolCalls.map((c: { name: string }) => c.name)).toEqual(['current_time']);
    expect(assistant.text).toMatch(/I asked to run run_command; that request was withdrawn, unanswered/);
    expect(assistant.text).not.toMatch(/current_time/);
    const results = history.find((m) => m.role === 'tool');
    expect(results.results.map((r: { name: string; isError: boolean }) => [r.name, r.isError])).toEqual([
      ['current_time', false],
    ]);
  });
});
