import { Cron, CronPattern } from 'croner';

/**
 * How close two runs of a cron pattern come, over a whole cycle (SCHEDULE_MIN_INTERVAL). Sampling
 * the next runs misses a short gap that comes late in the day (`0,59 0,2,…,20,21 * * *` runs at
 * 20:59 and 21:00), so the gaps are worked out from croner's own expanded fields instead:
 *
 * - Within a day the runs are every (hour, minute) pair the fields allow, so the gaps are those
 *   between consecutive times of day, plus the wrap-around from the last time of one run day to
 *   the first of the next: a day later when two consecutive days both run, else further apart.
 * - Whether two consecutive days run is asked of croner (the day-of-month, month and weekday fields
 *   with their `L`, `W`, `#` and either/both rules are croner's to read), day by day over the
 *   calendar's 28-year cycle, or three weeks for plain weekdays.
 * - Daylight saving moves the wall clock, so a real gap can be shorter than the pattern's: the
 *   hour a spring-forward skips brings the runs either side of it an hour closer (or puts a skipped
 *   run at the end of the gap), and an autumn's repeated hour may run its times twice. A change
 *   brings two runs at most its own size closer, so where that could matter, the zone's offset
 *   changes over the next year (a year is its rules' cycle) are found, and the real runs around
 *   each, as croner makes them, are measured.
 */

const DAY_SECONDS = 86_400;
/** croner's mark on a weekday that runs every week of the month (`#n` and `L` set other bits). */
const ALL_WEEKS = 63;
/** The Gregorian calendar's weekdays and leap years repeat every 28 years (1901–2099). */
const CALENDAR_CYCLE_DAYS = 28 * 365 + 7;
/** Runs measured around one change of the clocks, at most: a minute's runs either side of an hour's change. */
const MAX_RUNS_PER_CHANGE = 200;

/** Two runs closer than allowed: how far apart, and which, as a person reads them. */
export interface CronGap {
  seconds: number;
  /** `20:59 and 21:00`, or two dated times around a change of the clocks. */
  between: string;
  /** Whether they are this close only when the clocks change (daylight saving). */
  clockChange: boolean;
}

/**
 * The closest two runs of `pattern` (five fields) in `timeZone` come, from `now` on, when they are
 * closer than `minSeconds`; undefined when no two runs are. Throws what croner throws for a pattern
 * it cannot read.
 */
export function runsCloserThan(pattern: string, timeZone: string, now: Date, minSeconds: number): CronGap | undefined {
  const times = timesOfDay(new CronPattern(pattern, timeZone));
  if (times.length === 0) return undefined;
  let closest = wallClockGap(times, pattern, now);
  const cron = new Cron(pattern, { timezone: timeZone, paused: true });
  for (const change of offsetChanges(timeZone, now)) {
    // A change brings two runs at most its own size closer: only then are the real runs measured.
    if (closest && closest.seconds - change.shiftSeconds >= minSeconds) continue;
    const around = gapAroundChange(cron, change, timeZone);
    if (around && (!closest || around.seconds < closest.seconds)) closest = around;
  }
  return closest && closest.seconds < minSeconds ? closest : undefined;
}

/** Every time of day the pattern runs at, in seconds after midnight, in order. */
function timesOfDay(fields: CronPattern): number[] {
  const on = (values: number[]) => values.flatMap((v, i) => (v ? [i] : []));
  const times: number[] = [];
  for (const h of on(fields.hour))
    for (const m of on(fields.minute)) for (const s of on(fields.second)) times.push(h * 3600 + m * 60 + s);
  return times.sort((a, b) => a - b);
}

/** The shortest gap on the wall clock: within a day, and from one run day's last time to the next's first. */
function wallClockGap(times: number[], pattern: string, now: Date): CronGap | undefined {
  let closest: CronGap | undefined;
  for (let i = 1; i < times.length; i++) {
    const seconds = times[i]! - times[i - 1]!;
    if (!closest || seconds < closest.seconds)
      closest = { seconds, between: pair(times[i - 1]!, times[i]!), clockChange: false };
  }
  const first = times[0]!;
  const last = times.at(-1)!;
  // The wrap-around is longer than any gap within the day unless the day's first and last runs are
  // close to midnight; only then does it matter how far apart run days are.
  if (closest && DAY_SECONDS - last + first >= closest.seconds) return closest;
  const days = closestRunDays(pattern, now);
  if (days === undefined) return closest;
  const seconds = days * DAY_SECONDS - last + first;
  const later = days === 1 ? 'the next day' : `${days} days later`;
  if (!closest || seconds < closest.seconds)
    closest = { seconds, between: `${pair(last, first)} ${later}`, clockChange: false };
  return closest;
}

/**
 * The fewest days between two days the pattern runs on, or undefined when it runs on one day at most.
 * Each calendar day is asked of croner (`match`, the pattern's day fields at noon, no zone: a
 * calendar day is the same day in any zone), until two run days are a day apart. Plain weekdays
 * repeat every week; anything else (days of the month, months, `L`, `W`, `#`) is walked over the
 * calendar's 28-year cycle: about 10,000 days at worst.
 */
function closestRunDays(pattern: string, now: Date): number | undefined {
  const [, , dayOfMonth, month, dayOfWeek] = pattern.trim().split(/\s+/);
  const dayPattern = `0 12 ${dayOfMonth} ${month} ${dayOfWeek}`;
  const days = new Cron(dayPattern, { paused: true });
  const fields = new CronPattern(dayPattern);
  const weekly =
    fields.starDOM && fields.month.every(Boolean) && fields.dayOfWeek.every((v) => v === 0 || v === ALL_WEEKS);
  const horizon = weekly ? 21 : CALENDAR_CYCLE_DAYS;
  let closest: number | undefined;
  let lastRun: number | undefined;
  for (let day = 0; day <= horizon; day++) {
    if (!days.match(new Date(now.getFullYear(), now.getMonth(), now.getDate() + day, 12))) continue;
    if (lastRun !== undefined && (closest === undefined || day - lastRun < closest)) closest = day - lastRun;
    if (closest === 1) break;
    lastRun = day;
  }
  return closest;
}

/** A change of a zone's offset from UTC: when, and by how much. */
interface OffsetChange {
  at: Date;
  shiftSeconds: number;
}

/**
 * The changes of `timeZone`'s offset from UTC in the year after `now`: the offset is read once a
 * week (no zone changes its clocks twice within a week) and each change halved to its minute.
 */
function offsetChanges(timeZone: string, now: Date): OffsetChange[] {
  const offsetAt = offsetReader(timeZone);
  const changes: OffsetChange[] = [];
  const weekMs = 7 * DAY_SECONDS * 1000;
  const start = Math.floor(now.getTime() / 60_000) * 60_000;
  for (let week = 0; week < 53; week++) {
    let lo = start + week * weekMs;
    let hi = lo + weekMs;
    const before = offsetAt(lo);
    const after = offsetAt(hi);
    if (after === before) continue;
    // Halved to the minute: offsets change on a whole minute.
    while (hi - lo > 60_000) {
      const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000;
      if (offsetAt(mid) === before) lo = mid;
      else hi = mid;
    }
    changes.push({ at: new Date(hi), shiftSeconds: Math.abs(after - before) });
  }
  return changes;
}

/** The zone's offset from UTC at an instant, in seconds (Intl names it `GMT+01:00`). */
function offsetReader(timeZone: string): (at: number) => number {
  const format = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' });
  return (at) => {
    const name = format.formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? '';
    const match = /([+-])(\d{2}):(\d{2})/.exec(name);
    if (!match) return 0; // `GMT`: UTC itself
    return (match[1] === '-' ? -1 : 1) * (Number(match[2]) * 3600 + Number(match[3]) * 60);
  };
}

/**
 * The closest two real runs near an offset change, as croner makes them: from the last run before
 * the change's span to the first after it (the span: the change's size either side of it, where a
 * skipped or repeated hour lies).
 */
function gapAroundChange(cron: Cron, change: OffsetChange, timeZone: string): CronGap | undefined {
  const spanMs = (change.shiftSeconds + 60) * 1000;
  const from = change.at.getTime() - spanMs;
  const until = change.at.getTime() + spanMs;
  let run = cron.previousRuns(1, new Date(from))[0] ?? cron.nextRun(new Date(from));
  let closest: CronGap | undefined;
  for (let i = 0; run && i < MAX_RUNS_PER_CHANGE; i++) {
    const next = cron.nextRun(run);
    if (!next) break;
    const seconds = (next.getTime() - run.getTime()) / 1000;
    if (!closest || seconds < closest.seconds)
      closest = { seconds, between: `${clock(run, timeZone)} and ${clock(next, timeZone)}`, clockChange: true };
    if (next.getTime() > until) break;
    run = next;
  }
  return closest;
}

/** `20:59 and 21:00`: two times of day. */
function pair(a: number, b: number): string {
  return `${timeOfDay(a)} and ${timeOfDay(b)}`;
}

function timeOfDay(seconds: number): string {
  const hh = String(Math.floor(seconds / 3600)).padStart(2, '0');
  const mm = String(Math.floor((seconds % 3600) / 60)).padStart(2, '0');
  const ss = seconds % 60;
  return ss ? `${hh}:${mm}:${String(ss).padStart(2, '0')}` : `${hh}:${mm}`;
}

/** A run as a dated local time with its offset: `2027-10-31 02:50 GMT+2`. */
function clock(at: Date, timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  })
    .format(at)
    .replace(', ', ' ');
}
