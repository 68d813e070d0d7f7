import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { Priority } from '../../src/core/work-item.ts';

describe('interactive capacity', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      env: { WORKER_CONCURRENCY: '2', BACKGROUND_CONCURRENCY: '2' },
      script: {
        rules: [
          // Background research that keeps its slot busy for a long time.
          { match: '^research', rounds: [{ text: 'zzzzzzzzzzzzzzzzzzzz', chunkSize: 1, delayMs: 1000 }] },
          { rounds: [{ text: 'right away' }] },
        ],
      },
    });
  });
  afterAll(() => h.stop());

  it('starts a CRITICAL turn while every background slot is busy and 1,000 LOW jobs wait', async () => {
    const low = { type: 'RESEARCH' as const, priority: Priority.LOW };
    const busy = [await h.say('bg-0', 'research 0', low), await h.say('bg-1', 'research 1', low)];
    await waitFor(
      async () => {
        const { rows } = await h.app.pool.query(
          `SELECT 1 FROM countersign.work_items WHERE id = ANY($1) AND status = 'running'`,
          [busy.map((b) => b.id)],
        );
        return rows.length === 2 ? true : undefined;
      },
      20_000,
      'both background slots to be busy',
    );
    for (let i = 0; i < 1000; i++) await h.say(`waiting-${i}`, `research waiting ${i}`, low);

    const critical = await h.say('person', 'hello');
    const settled = await h.settled(critical.id, 15_000);
    expect(settled.status).toBe('done');
    expect(settled.result?.text).toBe('right away');

    // The background work was still occupying its slots and the LOW backlog was untouched.
    const { rows } = await h.app.pool.query<{ status: string; n: string }>(
      `SELECT status, count(*) AS n FROM countersign.work_items WHERE type = 'RESEARCH' GROUP BY status`,
    );
    const counts = Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
    expect(counts).toEqual({ running: 2, queued: 1000 });
  });
});
