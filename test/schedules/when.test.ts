import { describe, expect, it } from 'vitest';
import { formatSlot, nextSlots, readScheduleCommand, readWhen } from '../../src/schedules/when.ts';
import { describeScheduleRequest } from '../../src/schedules/manage.ts';

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

  it('refuses a pattern whose runs come too close late in the day, past the first twenty runs', () => {
    const hours = '0,2,4,6,8,10,12,14,16,18,20,21';
    expect(readWhen(`0,59 ${hours} * * *`, NOW, MIN)).toMatchObject({
      ok: false,
      message: expect.stringContaining('runs 1 minute apart (20:59 and 21:00)'),
    });
    expect(readWhen(`0 ${hours} * * *`, NOW, MIN)).toMatchObject({ ok: true });
  });

  it('measures the gap from the last run of a day to the first of the next run day', () => {
    expect(readWhen('0,59 0,23 * * 1,2', NOW, MIN)).toMatchObject({
      ok: false,
      message: expect.stringContaining('runs 1 minute apart (23:59 and 00:00 the next day)'),
    });
    // Mondays only: Monday 23:59 is followed by next Monday's 00:00, not Tuesday's.
    expect(readWhen('0,59 0,23 * * 1', NOW, MIN)).toMatchObject({ ok: true });
    expect(readWhen('0,59 0,23 * * 1', NOW, 3600)).toMatchObject({
      ok: false,
      message: expect.stringContaining('59 minutes apart (00:00 and 00:59)'),
    });
  });

  it('counts the clocks changing: a skipped hour and a repeated hour bring runs closer', () => {
    // 31 October 2027: Berlin's 02:00–03:00 happens twice; croner runs 02:50 CEST, then 02:00 CET.
    expect(readWhen('0,50 2 * * * Europe/Berlin', NOW, 900)).toMatchObject({
      ok: false,
      message: expect.stringMatching(
        /runs 10 minutes apart \(2027-10-31 02:50 .* and 2027-10-31 02:00 .*, when the clocks change\)/,
      ),
    });
    expect(readWhen('0,50 2 * * * UTC', NOW, 900)).toMatchObject({ ok: true });
    // 28 March 2027: 01:30 CET and 03:30 CEST are one hour apart, not two.
    expect(readWhen('30 1,3 * * * Europe/Berlin', NOW, 5400)).toMatchObject({
      ok: false,
      message: expect.stringContaining('runs 1 hour apart (2027-03-28 01:30'),
    });
    expect(readWhen('30 1,3 * * * Europe/Berlin', NOW, 3600)).toMatchObject({ ok: true });
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

  it('refuses a misspelt time zone instead of running in UTC with the zone taken into the task', () => {
    for (const text of ['0 9 * * 1-5 Europe/Berln summarise', '2026-12-01 09:00 Europe/Berln summarise']) {
      const read = readScheduleCommand(text, NOW, MIN);
      expect(read).toMatchObject({ ok: false });
      expect(!read.ok && read.message).toMatch(
        /"Europe\/Berln" is not a time zone I know \(did you mean Europe\/Berlin\?\)/,
      );
    }
    expect(readScheduleCommand('0 9 * * * CEST summarise', NOW, MIN)).toMatchObject({ ok: false });
    expect(readWhen('0 9 * * * Europe/Berln', NOW, MIN)).toMatchObject({ ok: false });
    // A capitalised first word of the task is not a zone.
    expect(readScheduleCommand('0 9 * * * TEST the build', NOW, MIN)).toMatchObject({
      ok: true,
      task: 'TEST the build',
    });
  });

  it('refuses a one-off less than a minute ahead, whose card could list no next run', () => {
    const read = readScheduleCommand('in 0m say hi', NOW, MIN);
    expect(read).toMatchObject({ ok: false, message: expect.stringMatching(/at least a minute ahead/) });
    expect(
      describeScheduleRequest({ when: 'in 0m', task: 'hi', background: false, catchUp: 'latest' }, NOW, MIN),
    ).toMatch(/cannot be made/);
    expect(
      describeScheduleRequest({ when: 'in 1m', task: 'hi', background: false, catchUp: 'latest' }, NOW, MIN),
    ).toMatch(/Next runs:\n• .*00:01/);
  });

  it('names the zone as written, not the locale’s GMT offset', () => {
    const nine = new Date('2026-12-01T08:00:00Z');
    expect(formatSlot(nine, 'CET')).toBe('Tue, 2026-12-01, 09:00 CET (GMT+1)');
    expect(formatSlot(nine, 'Europe/Berlin')).toBe('Tue, 2026-12-01, 09:00 Europe/Berlin (GMT+1)');
    expect(formatSlot(nine, 'UTC')).toBe('Tue, 2026-12-01, 08:00 UTC');
    const read = readScheduleCommand('2026-12-02 09:00 CET standup', NOW, MIN);
    expect(read).toMatchObject({ ok: true, task: 'standup' });
  });
});
