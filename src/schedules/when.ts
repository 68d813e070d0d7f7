import { Cron } from 'croner';
import { runsCloserThan, type CronGap } from './cron-gap.ts';

/**
 * WHEN, read (docs/schedules.md): a cron pattern in an IANA time zone (`0 9 * * 1-5 Europe/Berlin`),
 * an interval (`every 15m`), or one instant (`in 2h`, `2026-12-01 09:00 America/New_York`). Cron
 * slots and DST are croner's: a time a spring-forward skips runs at the first minute after the gap.
 */
export type When =
  | { kind: 'cron'; pattern: string; timeZone: string }
  | { kind: 'every'; everySeconds: number; startsAt: Date }
  | { kind: 'once'; at: Date; timeZone: string };

export type WhenReading = { ok: true; when: When } | { ok: false; message: string };

const EXAMPLES =
  'for example `0 9 * * 1-5 Europe/Berlin` (weekdays at 9:00), `every 15m`, `in 2h` or `2026-12-01 09:00 America/New_York`';

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
const DURATION = /^(\d{1,6})\s*(s|m|h|d)$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const TIME = /^\d{2}:\d{2}$/;

/** Whether `name` is an IANA time zone this Node knows. */
function isTimeZone(name: string): boolean {
  if (!/^[A-Za-z_]+(\/[A-Za-z0-9_+-]+)*$/.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** `15m`, `2h`, `300s`, `1d` in seconds; undefined for anything else. */
export function durationSeconds(duration: string): number | undefined {
  const match = DURATION.exec(duration.trim());
  return match ? Number(match[1]) * UNIT_SECONDS[match[2]!]! : undefined;
}

/**
 * Reads WHEN as a whole (the `schedule_task` tool's `when`): refuses what it cannot read, a slot
 * closer than `minIntervalSeconds` to the next, and a one-off in the past, each with an example.
 */
export function readWhen(text: string, now: Date, minIntervalSeconds: number): WhenReading {
  const words = text.trim().split(/\s+/).filter(Boolean);
  const split = splitWhen(words);
  if (!split || split.rest.length > 0)
    return { ok: false, message: `I could not read "${text.trim()}" as WHEN: ${EXAMPLES}.` };
  return checked(split.when, now, minIntervalSeconds);
}

/**
 * Splits `/schedule WHEN TASK` into the schedule and the task, reading as many words as WHEN as its
 * form takes: 2 for `every 15m` / `in 2h`, 3 for a date, 5 or 6 (with a time zone) for cron.
 */
export function readScheduleCommand(
  text: string,
  now: Date,
  minIntervalSeconds: number,
): { ok: true; when: When; whenText: string; task: string } | { ok: false; message: string } {
  const words = text.trim().split(/\s+/).filter(Boolean);
  const split = splitWhen(words);
  if (!split) return { ok: false, message: `Usage: /schedule WHEN TASK — WHEN is ${EXAMPLES}.` };
  const task = split.rest.join(' ').trim();
  if (!task) return { ok: false, message: 'What should I do then? Usage: /schedule WHEN TASK.' };
  const read = checked(split.when, now, minIntervalSeconds);
  if (!read.ok) return read;
  return { ok: true, when: read.when, whenText: words.slice(0, words.length - split.rest.length).join(' '), task };
}

type Unchecked =
  | { kind: 'cron'; pattern: string; timeZone: string }
  | { kind: 'every'; everySeconds: number }
  | { kind: 'in'; seconds: number }
  | { kind: 'at'; date: string; time: string; timeZone: string };

/** Abbreviations people write for a zone that are not IANA names (CET, EST and UTC are). */
const NOT_IANA_ABBREVIATIONS = new Set([
  'CEST',
  'BST',
  'IST',
  'PST',
  'PDT',
  'CDT',
  'CST',
  'EDT',
  'MDT',
  'AEST',
  'AEDT',
  'JST',
  'KST',
  'EEST',
  'WEST',
  'MSK',
]);

/**
 * A word where WHEN may end with a time zone that reads as one (`Europe/Berln`, `CEST`) but that this
 * Node does not know: refused rather than taken into the task, which would run the schedule in UTC.
 * Other capitalised words (`TEST the build`) start the task.
 */
function looksLikeZone(word: string): boolean {
  return /^[A-Za-z_]+\/[A-Za-z0-9_+\-/]+$/.test(word) || NOT_IANA_ABBREVIATIONS.has(word);
}

/** The known zone nearest to a misspelt one (at most two letters off), to suggest. */
function nearestZone(word: string): string | undefined {
  const wanted = word.toLowerCase();
  let best: { zone: string; distance: number } | undefined;
  for (const zone of Intl.supportedValuesOf('timeZone')) {
    const distance = editDistance(wanted, zone.toLowerCase());
    if (distance <= 2 && (!best || distance < best.distance)) best = { zone, distance };
  }
  return best?.zone;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

/** The zone word after WHEN: a known zone, none (UTC), or a refusal of one that reads as a zone but is not. */
function zoneAt(word: string | undefined): { zone: string | undefined } | { refused: string } {
  if (word && isTimeZone(word)) return { zone: word };
  if (!word || !looksLikeZone(word)) return { zone: undefined };
  const near = nearestZone(word);
  return {
    refused: `"${word}" is not a time zone I know${near ? ` (did you mean ${near}?)` : ''}: write an IANA name such as Europe/Berlin or America/New_York, or leave it out for UTC.`,
  };
}

function splitWhen(
  words: string[],
): { when: Unchecked | { invalid: string } | { refused: string }; rest: string[] } | undefined {
  const [first = '', second = '', third = ''] = words;
  if (first === 'every' || first === 'in') {
    const amount = durationSeconds(second);
    if (amount === undefined) return { when: { invalid: `"${first} ${second}"` }, rest: words.slice(2) };
    return {
      when: first === 'every' ? { kind: 'every', everySeconds: amount } : { kind: 'in', seconds: amount },
      rest: words.slice(2),
    };
  }
  if (DATE.test(first) && TIME.test(second)) {
    const zone = zoneAt(third);
    if ('refused' in zone) return { when: zone, rest: words.slice(3) };
    return {
      when: { kind: 'at', date: first, time: second, timeZone: zone.zone ?? 'UTC' },
      rest: words.slice(zone.zone ? 3 : 2),
    };
  }
  const fields = words.slice(0, 5);
  if (fields.length < 5 || !/[\d*]/.test(fields[0]!) || !fields.every((w) => /^[\d*,\-/A-Za-z?LW#]+$/.test(w)))
    return undefined;
  const zone = zoneAt(words[5]);
  if ('refused' in zone) return { when: zone, rest: words.slice(6) };
  return {
    when: { kind: 'cron', pattern: words.slice(0, 5).join(' '), timeZone: zone.zone ?? 'UTC' },
    rest: words.slice(zone.zone ? 6 : 5),
  };
}

function checked(
  when: Unchecked | { invalid: string } | { refused: string },
  now: Date,
  minIntervalSeconds: number,
): WhenReading {
  if ('refused' in when) return { ok: false, message: when.refused };
  if ('invalid' in when) return { ok: false, message: `I could not read ${when.invalid} as WHEN: ${EXAMPLES}.` };
  const min = `the shortest interval here is ${describeSeconds(minIntervalSeconds)} (SCHEDULE_MIN_INTERVAL)`;
  switch (when.kind) {
    case 'every':
      if (when.everySeconds < minIntervalSeconds)
        return { ok: false, message: `Every ${describeSeconds(when.everySeconds)} is too often: ${min}.` };
      return {
        ok: true,
        when: {
          kind: 'every',
          everySeconds: when.everySeconds,
          startsAt: new Date(now.getTime() + when.everySeconds * 1000),
        },
      };
    case 'in':
      // `in 0m` is now: its card would list no next run, and the scheduler's minute tick would run it late anyway.
      if (when.seconds < 60)
        return {
          ok: false,
          message: `A one-off run needs to be at least a minute ahead (\`in 1m\`, \`in 2h\`); to have it done now, just ask me.`,
        };
      return { ok: true, when: { kind: 'once', at: new Date(now.getTime() + when.seconds * 1000), timeZone: 'UTC' } };
    case 'at':
      return atInstant(when, now);
    case 'cron':
      return cronPattern(when, now, minIntervalSeconds, min);
  }
}

function atInstant(when: Extract<Unchecked, { kind: 'at' }>, now: Date): WhenReading {
  let at: Date | null;
  try {
    at = new Cron(`${when.date}T${when.time}:00`, { timezone: when.timeZone, paused: true }).nextRun(new Date(0));
  } catch {
    at = null;
  }
  if (!at) return { ok: false, message: `${when.date} ${when.time} is not a date and time I can read: ${EXAMPLES}.` };
  if (at.getTime() <= now.getTime())
    return { ok: false, message: `${when.date} ${when.time} ${when.timeZone} has passed already.` };
  return { ok: true, when: { kind: 'once', at, timeZone: when.timeZone } };
}

function cronPattern(
  when: Extract<Unchecked, { kind: 'cron' }>,
  now: Date,
  minIntervalSeconds: number,
  min: string,
): WhenReading {
  const read: When = { kind: 'cron', pattern: when.pattern, timeZone: when.timeZone };
  let close: CronGap | undefined;
  try {
    if (nextSlots(read, now, 1).length === 0)
      return { ok: false, message: `"${when.pattern}" never runs again: ${EXAMPLES}.` };
    close = runsCloserThan(when.pattern, when.timeZone, now, minIntervalSeconds);
  } catch (error) {
    return {
      ok: false,
      message: `"${when.pattern}" is not a cron pattern I can read (${(error as Error).message.split('\n')[0]}): ${EXAMPLES}.`,
    };
  }
  if (close) {
    const clockNote = close.clockChange ? ', when the clocks change' : '';
    return {
      ok: false,
      message: `"${when.pattern}" runs ${describeSeconds(close.seconds)} apart (${close.between}${clockNote}): ${min}.`,
    };
  }
  return { ok: true, when: read };
}

/** The next `count` slots strictly after `after`. */
export function nextSlots(when: When, after: Date, count: number): Date[] {
  const slots: Date[] = [];
  let from = after;
  for (let i = 0; i < count; i++) {
    const next = slotAfter(when, from);
    if (!next) break;
    slots.push(next);
    from = next;
  }
  return slots;
}

/** The first slot strictly after `after`, or undefined when there is none (a one-off that passed). */
export function slotAfter(when: When, after: Date): Date | undefined {
  switch (when.kind) {
    case 'once':
      return when.at.getTime() > after.getTime() ? when.at : undefined;
    case 'every': {
      const step = when.everySeconds * 1000;
      const start = when.startsAt.getTime();
      if (after.getTime() < start) return when.startsAt;
      return new Date(start + (Math.floor((after.getTime() - start) / step) + 1) * step);
    }
    case 'cron':
      return new Cron(when.pattern, { timezone: when.timeZone, paused: true }).nextRun(after) ?? undefined;
  }
}

/**
 * The latest slot at or before `until`, given `first`, a slot at or before it. Halving, not walking:
 * the latest slot is the earliest instant whose next slot is later than `until`, so a `*\/5`
 * schedule down for 30 days costs about 32 slot evaluations, not its 8,640 missed slots (the
 * scheduler finds it under the schedule's row lock). `next` is the slot function (a test counts it).
 */
export function latestSlotUpTo(when: When, first: Date, until: Date, next = slotAfter): Date {
  const passed = (t: number) => (next(when, new Date(t))?.getTime() ?? Infinity) > until.getTime();
  let lo = first.getTime();
  if (lo >= until.getTime() || passed(lo)) return first;
  // passed(lo) is false, passed(until) is true: halve to the first instant where it holds.
  let hi = until.getTime();
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (passed(mid)) hi = mid;
    else lo = mid;
  }
  return new Date(hi);
}

/** A length of time as people say it: `15 minutes`, `2 hours`, `90 seconds`. */
function describeSeconds(total: number): string {
  const [n, unit] =
    total % 86_400 === 0
      ? [total / 86_400, 'day']
      : total % 3600 === 0
        ? [total / 3600, 'hour']
        : total % 60 === 0
          ? [total / 60, 'minute']
          : [total, 'second'];
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/**
 * A slot as a card shows it: in the schedule's time zone, named as the person wrote it (`09:00 CET`,
 * `09:00 Europe/Berlin`), with its offset or abbreviation beside (`GMT+1`, `EST`) — the locale's short
 * name alone is `GMT+1` for most of Europe, which reads as a different zone.
 */
export function formatSlot(slot: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    weekday: 'short',
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).formatToParts(slot);
  const offset = parts.find((p) => p.type === 'timeZoneName')?.value;
  const local = parts
    .filter((p) => p.type !== 'timeZoneName')
    .map((p) => p.value)
    .join('')
    .trim();
  return offset && offset !== timeZone ? `${local} ${timeZone} (${offset})` : `${local} ${timeZone}`;
}

/** The time zone a schedule's slots are shown in. */
export function zoneOf(when: When): string {
  return when.kind === 'every' ? 'UTC' : when.timeZone;
}
