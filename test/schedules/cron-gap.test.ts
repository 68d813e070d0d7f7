import { Cron } from 'croner';
import { describe, expect, it } from 'vitest';
import { runsCloserThan } from '../../src/schedules/cron-gap.ts';

const NOW = new Date('2026-11-26T00:00:00Z');

/** A small seeded generator, so a failure names a pattern that fails again. */
function generator(seed: number) {
  let state = seed;
  const next = (n: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state % n;
  };
  const some = (max: number, most: number, base = 0) =>
    [...new Set(Array.from({ length: 1 + next(most) }, () => base + next(max)))].sort((a, b) => a - b).join(',');
  return { next, some };
}

/** The shortest gap between the real runs of the next 400 days, one by one, as croner makes them. */
function walkedShortestGap(pattern: string, timeZone: string): number {
  const cron = new Cron(pattern, { timezone: timeZone, paused: true });
  const end = NOW.getTime() + 400 * 86_400_000;
  let shortest = Infinity;
  for (let run = cron.nextRun(NOW); run && run.getTime() < end;) {
    const next = cron.nextRun(run);
    if (!next) break;
    shortest = Math.min(shortest, (next.getTime() - run.getTime()) / 1000);
    run = next;
  }
  return shortest;
}

describe('how close two runs of a cron pattern come', () => {
  it('agrees with walking a year of real runs, for random patterns in zones with and without daylight saving', () => {
    const { next, some } = generator(47);
    for (let i = 0; i < 12; i++) {
      const days = next(3) === 0 ? some(28, 4, 1) : '*';
      const weekdays = next(3) === 0 ? some(7, 3) : '*';
      const pattern = `${some(60, 2)} ${some(24, 3)} ${days} * ${weekdays}`;
      for (const zone of ['UTC', 'Europe/Berlin']) {
        const shortest = walkedShortestGap(pattern, zone);
        for (const min of [300, 3600, 86_400]) {
          const found = runsCloserThan(pattern, zone, NOW, min);
          expect({ pattern, zone, min, seconds: found?.seconds }).toEqual({
            pattern,
            zone,
            min,
            seconds: shortest < min ? shortest : undefined,
          });
        }
      }
    }
  });
});
