import { afterEach, describe, expect, it } from 'vitest';
import type { Script } from '../../src/agent/providers/scripted.ts';
import type { WorkItem } from '../../src/core/work-item.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { countingTool } from '../helpers/tools.ts';
import { BudgetedOutbound } from './budgeted-outbound.ts';

/**
 * A turn parked on a card hands its text to the reply outbox like any other ending (#35): the slot
 * is free at once, and the continuation — replying below the card — shows nothing before that text.
 */

const PARK_TEXT = 'Deploying the api now.';
const SLOW_REPORT = `Report: ${'all checks green; '.repeat(12)}`;

const script: Script = {
  rules: [
    {
      match: '^deploy',
      rounds: [
        { text: PARK_TEXT, toolCalls: [{ name: 'deploy_service', args: { service: 'api' } }] },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    {
      match: '^slow',
      rounds: [
        { text: PARK_TEXT, toolCalls: [{ name: 'deploy_service', args: { service: 'api' } }] },
        { text: SLOW_REPORT, chunkSize: 2, delayMs: 40 },
      ],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const alice = { platform: 'test', userId: 'U1' }; // the requester of every harness turn

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

async function start(outbound: BudgetedOutbound, runs: string[], env: Record<string, string> = {}): Promise<Harness> {
  h = await startHarness({
    script,
    outbound,
    tools: [countingTool('deploy_service', runs, { risk: 'medium', result: 'deployed' })],
    env,
  });
  return h;
}

const outboxRows = async (harness: Harness) =>
  Number((await harness.app.pool.query('SELECT count(*)::int AS n FROM countersign.reply_outbox')).rows[0].n);

/** Whether a work item's reply still waits in the outbox. */
const waiting = async (harness: Harness, item: WorkItem) =>
  Boolean(
    (await harness.app.pool.query('SELECT 1 FROM countersign.reply_outbox WHERE work_item_id = $1', [item.id]))
      .rowCount,
  );

/** The parked turn's card, once it is posted. */
async function cardOf(harness: Harness, item: WorkItem) {
  const settled = await harness.settled(item.id);
  expect(settled.status).toBe('awaiting_approval');
  const envelope = await waitFor(
    async () => {
      const { rows } = await harness.app.pool.query<{ card_message_id: string }>(
        `SELECT card_message_id FROM countersign.approval_envelopes
          WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
        [item.id],
      );
      return rows[0];
    },
    10_000,
    'the approval card',
  );
  return harness.outbound.messages.get(envelope.card_message_id)!;
}

function buttonOf(card: { buttons: Array<{ label: string; value: string }> | undefined }, label: string): string {
  const button = card.buttons?.find((b) => b.label === label);
  if (!button) throw new Error(`no ${label} button on the card`);
  return button.value;
}

/** The continuation a click started. */
async function clicked(harness: Harness, value: string): Promise<WorkItem> {
  const result = await harness.app.approvals.click(value, alice);
  if (!result.ok || !('continuation' in result)) throw new Error(`the click was refused: ${JSON.stringify(result)}`);
  return result.continuation;
}

/**
 * The messages of a conversation as the outbound logged them: the park message (the placeholder)
 * never changes after the continuation first shows something, and the continuation's reply is
 * posted once.
 */
function expectParkTextFirst(outbound: BudgetedOutbound, parkMessageId: string, continuationText: RegExp) {
  const continuationPosts = outbound.log.filter((c) => c.kind === 'post' && continuationText.test(c.text));
  expect(continuationPosts).toHaveLength(1);
  const firstContinuationCall = outbound.log.findIndex((c) => c.id === continuationPosts[0]!.id);
  const lastParkEdit = outbound.log.findLastIndex((c) => c.id === parkMessageId);
  expect(outbound.log[lastParkEdit]?.text).toBe(PARK_TEXT);
  expect(lastParkEdit).toBeLessThan(firstContinuationCall);
}

describe('a parked turn and the reply outbox', () => {
  it('frees the slot at once while the budget is spent; the park text shows later', async () => {
    const outbound = new BudgetedOutbound();
    // One slot and no express pool: a second turn can only run once the parked one let go of it.
    const harness = await start(outbound, [], { WORKER_CONCURRENCY: '1', EXPRESS_CONCURRENCY: '0' });
    const parked = await harness.say('park-slot', 'deploy api', { placeholder: '…' });
    const card = await cardOf(harness, parked);
    expect(card.text).toContain('deploy_service');

    const other = await harness.say('park-slot-other', 'hello');
    expect((await harness.settled(other.id)).status).toBe('done');
    await waitFor(
      async () => (outbound.channelText('park-slot-other').includes('ok') ? true : undefined),
      10_000,
      'the other turn to answer',
    );
    // The park text still waits for the budget, as a row; the stream's own wait was given up.
    const [placeholder] = [...outbound.messages.values()].filter((m) => m.channel === 'park-slot');
    expect(placeholder?.text).toBe('…');
    expect(await waiting(harness, parked)).toBe(true);
    expect(outbound.abandoned).toBeGreaterThanOrEqual(1);

    outbound.open();
    await waitFor(async () => ((await outboxRows(harness)) === 0 ? true : undefined), 10_000, 'the row to go');
    expect(placeholder?.text).toBe(PARK_TEXT);
    // The text is final: the Stop button it may have shown is gone.
    expect(placeholder?.buttons ?? []).toEqual([]);
    expect(outbound.channelText('park-slot')).toHaveLength(2);
  });

  it('shows the continuation only after the park text when approve is clicked while it waits', async () => {
    const outbound = new BudgetedOutbound();
    const runs: string[] = [];
    const harness = await start(outbound, runs);
    const finished: string[] = [];
    harness.app.events.on('finished', ({ item }) => finished.push(item.id));
    const parked = await harness.say('park-approve', 'deploy api', { placeholder: '…' });
    const card = await cardOf(harness, parked);
    const parkMessage = outbound.log.find((c) => c.kind === 'post' && c.text === '…')!.id;

    const continuation = await clicked(harness, buttonOf(card, 'Approve'));
    expect((await harness.settled(continuation.id)).status).toBe('done');
    expect(runs).toEqual(['api']);
    // Computed and settled, but nothing of it shows while the park text still waits.
    expect(outbound.log.some((c) => /^Result/.test(c.text))).toBe(false);
    expect(await outboxRows(harness)).toBe(2);

    outbound.open();
    await waitFor(async () => ((await outboxRows(harness)) === 0 ? true : undefined), 10_000, 'the rows to go');
    await waitFor(async () => (finished.includes(continuation.id) ? true : undefined), 5_000, 'the finish');
    const texts = outbound.channelText('park-approve');
    expect(texts[0]).toBe(PARK_TEXT);
    expect(texts.at(-1)).toBe('Result: deployed api');
    expect(texts).toHaveLength(3);
    expectParkTextFirst(outbound, parkMessage, /^Result/);
    expect(finished.filter((id) => id === continuation.id)).toHaveLength(1);
  });

  it('shows a denial only after the park text', async () => {
    const outbound = new BudgetedOutbound();
    const runs: string[] = [];
    const harness = await start(outbound, runs);
    const parked = await harness.say('park-deny', 'deploy api', { placeholder: '…' });
    const card = await cardOf(harness, parked);
    const parkMessage = outbound.log.find((c) => c.kind === 'post' && c.text === '…')!.id;

    const continuation = await clicked(harness, buttonOf(card, 'Deny'));
    expect((await harness.settled(continuation.id)).status).toBe('done');
    outbound.open();
    await waitFor(async () => ((await outboxRows(harness)) === 0 ? true : undefined), 10_000, 'the rows to go');
    expect(runs).toEqual([]);
    expect(outbound.channelText('park-deny').at(-1)).toMatch(/^Result: A person denied this call/);
    expectParkTextFirst(outbound, parkMessage, /^Result/);
  });

  it('stops a continuation waiting behind the park text, and shows both once, in order', async () => {
    const outbound = new BudgetedOutbound();
    const harness = await start(outbound, []);
    const cancelled: string[] = [];
    harness.app.events.on('cancelled', ({ item }) => cancelled.push(item.id));
    const parked = await harness.say('park-stop', 'slow deploy', { placeholder: '…' });
    const card = await cardOf(harness, parked);
    const parkMessage = outbound.log.find((c) => c.kind === 'post' && c.text === '…')!.id;

    // The parked turn itself computes nothing any more: Stop on its message refuses.
    expect(await harness.app.stopTurn(parked.id, alice)).toEqual({
      ok: false,
      reason: 'This turn has already finished.',
    });

    const continuation = await clicked(harness, buttonOf(card, 'Approve'));
    await waitFor(
      async () => {
        const { rows } = await harness.app.pool.query(`SELECT status FROM countersign.work_items WHERE id = $1`, [
          continuation.id,
        ]);
        return rows[0]?.status === 'running' ? true : undefined;
      },
      10_000,
      'the continuation to run',
    );
    expect(await harness.app.stopTurn(continuation.id, alice)).toEqual({ ok: true });
    expect((await harness.settled(continuation.id)).status).toBe('cancelled');
    expect(outbound.log.some((c) => c.text.includes('Report:'))).toBe(false);

    outbound.open();
    await waitFor(async () => ((await outboxRows(harness)) === 0 ? true : undefined), 10_000, 'the rows to go');
    await waitFor(async () => (cancelled.includes(continuation.id) ? true : undefined), 5_000, 'the cancellation');
    expect(outbound.channelText('park-stop').at(-1)).toMatch(/Stopped/i);
    expectParkTextFirst(outbound, parkMessage, /Stopped|Report/i);
  });
});
