import { describe, expect, it } from 'vitest';
import { nextSlots, readScheduleCommand, readWhen } from '../../src/schedules/when.ts';

const NOW = new Date('2026-11-26T00:00:00Z');
const MIN = 300;

describe('reading WHEN', () => {
  it('computes a Berlin 02:30 schedule across the spring-forward gap and the autumn repeat', () => {
    const read = readWhen('30 2 * * * Europe/Berlin', NOW, MIN);
    if (!read.ok) throw new Error(read.message);
    // 29 March 2026: 02:30 does not exist in Berlin; croner runs at the first minute after the gap.
    expect(nextSlots(read.when, new Date('2026-03-27T12:00:00Z'), 3).map((d) => d.toISOString())).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
    // 25 October 2026: 02:30 happens twice; the schedule runs once.
    expect(nextSlots(read.when, new Date('2026-10-24T12:00:00Z'), 2).map((d) => d.toISOString())).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
    ]);
  });

  it('reads intervals, one-offs and dates in a time zone', () => {
    expect(readWhen('every 15m', NOW, MIN)).toMatchObject({ ok: true, when: { kind: 'every', everySeconds: 900 } });
    expect(readWhen('in 2h', NOW, MIN)).toMatchObject({ ok: true, when: { at: new Date('2026-11-26T02:00:00Z') } });
    expect(readWhen('2026-12-01 09:00 America/New_York', NOW, MIN)).toMatchObject({
      ok: true,
      when: { kind: 'once', at: new Date('2026-12-01T14:00:00Z') },
    });
  });

  it('refuses what runs too often, what has passed and what it cannot read, with an example', () => {
    expect(readWhen('every 1m', NOW, MIN)).toMatchObject({ ok: false, message: expect.stringMatching(/too often/) });
    expect(readWhen('* * * * *', NOW, MIN)).toMatchObject({ ok: false, message: expect.stringMatching(/5 minutes/) });
    expect(readWhen('2020-01-01 09:00', NOW, MIN)).toMatchObject({
      ok: false,
      message: expect.stringMatching(/passed/),
    });
    for (const bad of ['tomorrow', '61 * * * *', 'every fortnight']) {
      expect(readWhen(bad, NOW, MIN)).toMatchObject({ ok: false, message: expect.stringMatching(/every 15m/) });
    }
  });

  it('splits /schedule WHEN TASK at the end of WHEN', () => {
    expect(readScheduleCommand('0 9 * * 1-5 Europe/Berlin summarise incidents', NOW, MIN)).toMatchObject({
      ok: true,
      whenText: '0 9 * * 1-5 Europe/Berlin',
      task: 'summarise incidents',
    });
    expect(readScheduleCommand('in 2h check the deploy', NOW, MIN)).toMatchObject({
      ok: true,
      task: 'check the deploy',
    });
    expect(readScheduleCommand('every 15m', NOW, MIN)).toMatchObject({ ok: false });
  });
});
