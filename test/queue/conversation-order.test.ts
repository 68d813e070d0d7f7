import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';

const CONVERSATIONS = 50;
const TURNS = 5;

describe('turn ordering', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      env: { WORKER_CONCURRENCY: '8' },
      // Each turn streams a little, so turns of different conversations overlap in time.
      script: { rules: [{ rounds: [{ text: 'ack {{lastUser}}', chunkSize: 4, delayMs: 5 }] }] },
    });
  });
  afterAll(() => h.stop());

  it('runs every conversation’s turns strictly in order while conversations run in parallel', async () => {
    const items = [];
    // Interleave enqueues across conversations, as real traffic arrives.
    for (let t = 0; t < TURNS; t++) {
      for (let c = 0; c < CONVERSATIONS; c++) items.push(await h.say(`conv-${c}`, `c${c} t${t}`));
    }
    for (const item of items) expect((await h.settled(item.id, 120_000)).status).toBe('done');

    const { rows } = await h.app.pool.query<{
      conversation_id: string;
      seq: string;
      started_at: Date;
      finished_at: Date;
    }>(`SELECT conversation_id, seq, started_at, finished_at FROM countersign.work_items ORDER BY seq`);
    expect(rows).toHaveLength(CONVERSATIONS * TURNS);
    const byConversation = Map.groupBy(rows, (r) => r.conversation_id);
    for (const turns of byConversation.values()) {
      for (let i = 1; i < turns.length; i++) {
        // The next turn of a conversation starts only after the previous one finished.
        expect(turns[i]!.started_at.getTime()).toBeGreaterThanOrEqual(turns[i - 1]!.finished_at.getTime());
      }
    }
    // Some turns of different conversations overlapped.
    const sorted = [...rows].sort((a, b) => a.started_at.getTime() - b.started_at.getTime());
    const overlapping = sorted.some((r, i) => i > 0 && r.started_at < sorted[i - 1]!.finished_at);
    expect(overlapping).toBe(true);
  });

  it('keeps each conversation’s history in the order the person wrote it', async () => {
    const { rows } = await h.app.pool.query<{ message: { role: string; text: string } }>(
      `SELECT message FROM countersign.messages WHERE conversation_id = 'conv-7' ORDER BY id`,
    );
    const expected = Array.from({ length: TURNS }, (_, t) => [
      { role: 'user', text: `c7 t${t}` },
      { role: 'assistant', text: `ack c7 t${t}` },
    ]).flat();
    expect(rows.map((r) => ({ role: r.message.role, text: r.message.text }))).toEqual(expected);
  });

  it('streams each reply into the platform message and ends with the complete text', async () => {
    expect(h.outbound.channelText('conv-3')).toEqual(Array.from({ length: TURNS }, (_, t) => `ack c3 t${t}`));
  });
});
