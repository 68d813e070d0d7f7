import { afterEach, describe, expect, it } from 'vitest';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { countingTool } from '../helpers/tools.ts';
import { BudgetedOutbound } from './budgeted-outbound.ts';

/**
 * A parked turn's text goes through the reply outbox (#35) while its card is posted by a job of its
 * own. A text longer than the message it has needs new messages; those must land above the card,
 * as they did when the text was finished before the card was scheduled, never between the card and
 * the continuation.
 */

const SENTENCE = 'Checked the rollout plan and every canary. ';
const LONG_PARK_TEXT = SENTENCE.repeat(40).trim();
const SHORT_PARK_TEXT = 'Deploying the api now.';

const script: Script = {
  rules: [
    {
      match: '^long',
      rounds: [
        { text: LONG_PARK_TEXT, toolCalls: [{ name: 'deploy_service', args: { service: 'api' } }] },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    {
      match: '^short',
      rounds: [
        { text: SHORT_PARK_TEXT, toolCalls: [{ name: 'deploy_service', args: { service: 'api' } }] },
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

async function start(outbound: BudgetedOutbound): Promise<Harness> {
  h = await startHarness({
    script,
    outbound,
    tools: [countingTool('deploy_service', [], { risk: 'medium', result: 'deployed' })],
  });
  return h;
}

const outboxRows = async (harness: Harness) =>
  Number((await harness.app.pool.query('SELECT count(*)::int AS n FROM countersign.reply_outbox')).rows[0].n);

/** The id of the parked turn's card, once it is posted. */
async function cardIdOf(harness: Harness, workItemId: string): Promise<string> {
  return waitFor(
    async () => {
      const { rows } = await harness.app.pool.query<{ card_message_id: string }>(
        `SELECT card_message_id FROM countersign.approval_envelopes
          WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
        [workItemId],
      );
      return rows[0]?.card_message_id;
    },
    15_000,
    'the approval card',
  );
}

describe('a parked turn’s text and its card', () => {
  it('posts the card below every message of a park text that needs more than it has', async () => {
    // Messages of 700 characters: the park text needs three, and has only its placeholder.
    const outbound = new BudgetedOutbound('test', { maxMessageLength: 700 });
    const harness = await start(outbound);
    const parked = await harness.say('park-card-long', 'long deploy', { placeholder: '…' });
    expect((await harness.settled(parked.id)).status).toBe('awaiting_approval');
    await waitFor(async () => ((await outboxRows(harness)) === 1 ? true : undefined), 10_000, 'the park row');

    outbound.open();
    const cardId = await cardIdOf(harness, parked.id);
    await waitFor(async () => ((await outboxRows(harness)) === 0 ? true : undefined), 10_000, 'the park text');

    const cardPost = outbound.log.findIndex((c) => c.kind === 'post' && c.id === cardId);
    const parkPosts = outbound.log.filter((c) => c.kind === 'post' && c.id !== cardId);
    expect(parkPosts.length).toBeGreaterThanOrEqual(3);
    for (const post of parkPosts) expect(outbound.log.indexOf(post)).toBeLessThan(cardPost);
    // The card is the newest message: the continuation replies right below it.
    expect([...outbound.messages.values()].at(-1)?.id).toBe(cardId);
  });

  it('never posts a card withdrawn by a newer message while it waited for the park text', async () => {
    const outbound = new BudgetedOutbound('test', { maxMessageLength: 700 });
    const harness = await start(outbound);
    const parked = await harness.say('park-card-withdrawn', 'long deploy', { placeholder: '…' });
    expect((await harness.settled(parked.id)).status).toBe('awaiting_approval');
    // The card job waits for the park text, which waits for the shut budget.
    await waitFor(
      async () => {
        const { rows } = await harness.app.pool.query(
          `SELECT 1 FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
            WHERE t.identifier = 'countersign_show_approval_card' AND j.locked_at IS NOT NULL`,
        );
        return rows.length > 0 ? true : undefined;
      },
      10_000,
      'the card job to wait',
    );
    const newer = await harness.say('park-card-withdrawn', 'never mind', { mode: 'steer' });
    expect((await harness.settled(newer.id)).status).toBe('done');

    outbound.open();
    await waitFor(async () => ((await outboxRows(harness)) === 0 ? true : undefined), 10_000, 'the rows to go');
    await waitFor(
      async () => {
        const { rows } = await harness.app.pool.query(`SELECT count(*)::int AS n FROM graphile_worker._private_jobs`);
        return rows[0].n === 0 ? true : undefined;
      },
      10_000,
      'the card job to end',
    );
    const { rows } = await harness.app.pool.query<{ status: string; card_message_id: string | null }>(
      'SELECT status, card_message_id FROM countersign.approval_envelopes WHERE work_item_id = $1',
      [parked.id],
    );
    expect(rows).toEqual([{ status: 'superseded', card_message_id: null }]);
    expect(outbound.messages.size).toBe(4);
  });

  it('does not hold the card back for a park text that edits the message it has', async () => {
    const outbound = new BudgetedOutbound();
    const harness = await start(outbound);
    const parked = await harness.say('park-card-short', 'short deploy', { placeholder: '…' });
    // The budget stays shut: the park text waits as a row, and the card shows below its placeholder.
    const cardId = await cardIdOf(harness, parked.id);
    expect(await outboxRows(harness)).toBe(1);
    expect(outbound.log.map((c) => c.kind)).toEqual(['post', 'post']);
    expect(outbound.log[1]?.id).toBe(cardId);

    outbound.open();
    await waitFor(async () => ((await outboxRows(harness)) === 0 ? true : undefined), 10_000, 'the park text');
    expect(outbound.messages.get(outbound.log[0]!.id)?.text).toBe(SHORT_PARK_TEXT);
  });
});
