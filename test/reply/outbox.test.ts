import { afterEach, describe, expect, it } from 'vitest';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';
import { BudgetedOutbound } from './budgeted-outbound.ts';

const script: Script = {
  rules: [{ rounds: [{ text: 'The answer is forty-two, and that is final.', chunkSize: 4, delayMs: 5 }] }],
};

let h: Harness | undefined;
let extra: (() => Promise<void>) | undefined;
afterEach(async () => {
  await h?.stop();
  await extra?.();
  h = undefined;
  extra = undefined;
});

async function start(outbound: BudgetedOutbound, db?: TestDatabase): Promise<Harness> {
  h = await startHarness({ script, outbound, ...(db ? { db } : {}) });
  return h;
}

const outboxRows = async (harness: Harness) =>
  Number((await harness.app.pool.query('SELECT count(*)::int AS n FROM countersign.reply_outbox')).rows[0].n);

/** The turn's events, as the process emits them. */
function eventsOf(harness: Harness) {
  const seen: string[] = [];
  harness.app.events.on('finished', () => seen.push('finished'));
  harness.app.events.on('firstVisibleText', () => seen.push('firstVisibleText'));
  return seen;
}

describe('the reply outbox', () => {
  it('frees the worker slot when the computation ends, while the final text waits for the budget', async () => {
    const outbound = new BudgetedOutbound();
    const harness = await start(outbound);
    const events = eventsOf(harness);
    const item = await harness.say('outbox-slot', 'question', { placeholder: '…' });

    const settled = await harness.settled(item.id);
    expect(settled.status).toBe('done');
    // The job is complete (the slot is free), the answer is not visible yet, and it waits as a row.
    await waitFor(
      async () => {
        const { rows } = await harness.app.pool.query(`SELECT count(*)::int AS n FROM graphile_worker._private_jobs`);
        return rows[0].n === 0 ? true : undefined;
      },
      10_000,
      'the turn job to complete',
    );
    expect(outbound.channelText('outbox-slot')).toEqual(['…']);
    expect(await outboxRows(harness)).toBe(1);
    expect(events).toEqual([]);
    // The stream's own wait for a token was given up, not left holding one.
    expect(outbound.abandoned).toBeGreaterThanOrEqual(1);

    outbound.open();
    await waitFor(async () => ((await outboxRows(harness)) === 0 ? true : undefined), 10_000, 'the row to go');
    expect(outbound.channelText('outbox-slot')).toEqual(['The answer is forty-two, and that is final.']);
    // Partial texts that waited collapsed into the final: one edit of the placeholder, nothing posted.
    expect([...outbound.messages.values()][0]?.edits).toBe(1);
    // "Answer visible" follows the delivery: the first text and the finish are announced once, now.
    await waitFor(async () => (events.length === 2 ? true : undefined), 5_000, 'the events');
    expect(events).toEqual(['firstVisibleText', 'finished']);
  });

  it('retries a platform answering 500 or 429 and shows the final text exactly once', async () => {
    const outbound = new BudgetedOutbound();
    const harness = await start(outbound);
    const item = await harness.say('outbox-errors', 'question', { placeholder: '…' });
    await harness.settled(item.id);
    outbound.failNext = 4;
    outbound.failWith = Object.assign(new Error('ratelimited'), { retryAfterMs: 20 });
    outbound.open();
    await waitFor(async () => ((await outboxRows(harness)) === 0 ? true : undefined), 20_000, 'the row to go');
    expect(outbound.channelText('outbox-errors')).toEqual(['The answer is forty-two, and that is final.']);
    expect(outbound.messages.size).toBe(1);
  });

  it('keeps a waiting reply through a database outage and delivers it once the database is back', async () => {
    const db = await createTestDatabase();
    const u = new URL(db.url);
    const proxy = await TcpProxy.start({ host: u.hostname, port: Number(u.port || 5432) });
    const proxied: TestDatabase = { url: TcpProxy.rewrite(db.url, proxy.port), drop: () => db.drop() };
    extra = async () => {
      proxy.restore();
      await proxy.close();
      await db.drop();
    };
    const outbound = new BudgetedOutbound();
    const harness = await start(outbound, proxied);
    const events = eventsOf(harness);
    const item = await harness.say('outbox-outage', 'question', { placeholder: '…' });
    await harness.settled(item.id);
    expect(await outboxRows(harness)).toBe(1);

    proxy.cut();
    // The platform shows the text while the database is gone; the row cannot be removed yet.
    outbound.open();
    await waitFor(
      async () =>
        outbound.channelText('outbox-outage')[0] === 'The answer is forty-two, and that is final.' ? true : undefined,
      10_000,
      'the text to show',
    );
    expect(events).not.toContain('finished');
    proxy.restore();
    await waitFor(async () => (events.includes('finished') ? true : undefined), 30_000, 'the finish to be announced');
    expect(await outboxRows(harness)).toBe(0);
    expect(outbound.messages.size).toBe(1);
    expect(events.filter((e) => e === 'finished')).toHaveLength(1);
  });
});
