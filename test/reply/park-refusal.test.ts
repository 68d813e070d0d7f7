import { afterEach, describe, expect, it } from 'vitest';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { countingTool } from '../helpers/tools.ts';
import { BudgetedOutbound } from './budgeted-outbound.ts';

/**
 * A continuation refused on resume (the calls changed after they were shown) says so below the
 * card. Its parked turn's text may still wait in the reply outbox for the platform's budget (#35):
 * the refusal waits for it too, and, like every other ending, it does so in the outbox, never in the
 * worker slot.
 */

const PARK_TEXT = 'Deploying the api now.';

const script: Script = {
  rules: [
    {
      match: '^deploy',
      rounds: [
        { text: PARK_TEXT, toolCalls: [{ name: 'deploy_service', args: { service: 'api' } }] },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const outboxRows = async (harness: Harness) =>
  Number((await harness.app.pool.query('SELECT count(*)::int AS n FROM countersign.reply_outbox')).rows[0].n);

describe('a refused continuation behind a park text that waits for the budget', () => {
  it('frees its slot at once and shows the refusal after the park text', async () => {
    const outbound = new BudgetedOutbound();
    const runs: string[] = [];
    const failed: string[] = [];
    // One slot and no express pool: another turn runs only once the refused one let go of it.
    const harness = (h = await startHarness({
      script,
      outbound,
      tools: [countingTool('deploy_service', runs, { risk: 'medium', result: 'deployed' })],
      env: { WORKER_CONCURRENCY: '1', EXPRESS_CONCURRENCY: '0' },
    }));
    harness.app.events.on('failed', ({ item }) => failed.push(item.id));
    const parked = await harness.say('park-refused', 'deploy api', { placeholder: '…' });
    const envelope = await waitFor(
      async () => {
        const { rows } = await harness.app.pool.query<{ id: string; nonce: string }>(
          `SELECT id, nonce FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
          [parked.id],
        );
        return rows[0];
      },
      15_000,
      'the card',
    );
    // The calls change after they were shown: the continuation is refused on resume.
    await harness.app.pool.query(
      `UPDATE countersign.approval_envelopes SET calls = replace(calls, '"service":"api"', '"service":"db"') WHERE id = $1`,
      [envelope.id],
    );
    const clicked = await harness.app.approvals.click(`${envelope.nonce}.A`, { platform: 'test', userId: 'U1' });
    if (!clicked.ok || !('continuation' in clicked)) throw new Error('expected the click to be consumed');
    expect((await harness.settled(clicked.continuation.id)).status).toBe('failed');

    // The budget is still shut, and the only slot is free for another conversation.
    const other = await harness.say('park-refused-other', 'hello');
    expect((await harness.settled(other.id)).status).toBe('done');
    expect(outbound.log.some((c) => /did not run/.test(c.text))).toBe(false);
    const waiting = await harness.app.pool.query<{ id: string }>(
      'SELECT work_item_id::text AS id FROM countersign.reply_outbox WHERE work_item_id = ANY($1::uuid[]) ORDER BY seq',
      [[parked.id, clicked.continuation.id]],
    );
    expect(waiting.rows.map((r) => r.id)).toEqual([parked.id, clicked.continuation.id]);

    outbound.open();
    await waitFor(async () => ((await outboxRows(harness)) === 0 ? true : undefined), 10_000, 'the rows to go');
    const lastParkEdit = outbound.log.findLastIndex((c) => c.text === PARK_TEXT);
    const refusal = outbound.log.findIndex((c) => /plan hash mismatch/.test(c.text));
    expect(lastParkEdit).toBeGreaterThanOrEqual(0);
    expect(refusal).toBeGreaterThan(lastParkEdit);
    expect(outbound.log.filter((c) => /plan hash mismatch/.test(c.text))).toHaveLength(1);
    await waitFor(async () => (failed.includes(clicked.continuation.id) ? true : undefined), 5_000, 'the failure');
    expect(failed.filter((id) => id === clicked.continuation.id)).toHaveLength(1);
    expect(runs).toEqual([]);
  });
});
