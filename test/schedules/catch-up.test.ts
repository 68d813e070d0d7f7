import { describe, expect, it } from 'vitest';
import { latestSlotUpTo, readWhen, slotAfter, type When } from '../../src/schedules/when.ts';

const MADE = new Date('2027-03-01T00:00:00Z');

function read(text: string): When {
  const reading = readWhen(text, MADE, 300);
  if (!reading.ok) throw new Error(reading.message);
  return reading.when;
}

/** The real slot function, counting its calls. */
function counted() {
  const calls = { n: 0 };
  const next: typeof slotAfter = (when, after) => {
    calls.n += 1;
    return slotAfter(when, after);
  };
  return { calls, next };
}

/** The answer by walking every missed slot, as the scheduler did. */
function walked(when: When, first: Date, until: Date): Date {
  let slot = first;
  for (;;) {
    const next = slotAfter(when, slot);
    if (!next || next > until) return slot;
    slot = next;
  }
}

describe('catching up after downtime', () => {
  it('finds the latest due slot of a */5 schedule down for 30 days in a few dozen slot evaluations', () => {
    const when = read('*/5 * * * *');
    const first = slotAfter(when, MADE)!;
    const back = new Date(first.getTime() + 30 * 86_400_000 + 123_456);
    const { calls, next } = counted();
    const latest = latestSlotUpTo(when, first, back, next);
    expect(latest.toISOString()).toBe('2027-03-31T00:05:00.000Z');
    // Walking every missed slot, as the scheduler did, took 8,641 evaluations.
    expect(calls.n).toBeLessThanOrEqual(40);
  });

  it('agrees with walking every slot, for intervals, cron across a change of the clocks, and no downtime', () => {
    const cases: Array<[When, Date]> = [
      [read('every 15m'), new Date('2027-03-09T13:07:31.250Z')],
      [read('*/30 * * * * Europe/Berlin'), new Date('2027-03-29T00:59:59Z')],
      [read('0,50 2 * * 1-5 Europe/Berlin'), new Date('2027-11-02T09:00:00Z')],
      [read('17 9 1 * *'), new Date('2027-06-01T09:17:00Z')],
    ];
    for (const [when, until] of cases) {
      const first = slotAfter(when, MADE)!;
      const { calls, next } = counted();
      expect(latestSlotUpTo(when, first, until, next)).toEqual(walked(when, first, until));
      expect(calls.n).toBeLessThanOrEqual(45);
      // Due right now: the first slot is the latest.
      expect(latestSlotUpTo(when, first, first)).toEqual(first);
    }
  });
});
