import { personKey, sameAccountHere, type Requester } from '../core/person.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import type { ScheduleListing } from '../core/schedule-list.ts';
import type { Pool } from '../db/pool.ts';
import { ownerLabel, preview, shortId, type RecordScheduleEvent } from './scheduler.ts';
import {
  countLiveSchedulesOf,
  deleteSchedule,
  findSchedule,
  insertSchedule,
  listSchedules,
  pauseSchedule,
  recentRuns,
  resumeSchedule,
  whenOf,
  type ScheduleRow,
} from './store.ts';
import { formatSlot, nextSlots, readWhen, slotAfter, zoneOf } from './when.ts';

/** The limits of docs/schedules.md: SCHEDULES_MAX_PER_PERSON and SCHEDULE_MIN_INTERVAL. */
export interface ScheduleLimits {
  maxPerPerson: number;
  minIntervalSeconds: number;
}

export interface ScheduleRequest {
  /** Stable for one request (the tool call's), so a replayed call makes no second schedule. */
  id: string;
  owner: Requester;
  place: ReplyTarget;
  conversationId: string;
  when: string;
  task: string;
  background: boolean;
  catchUp: 'latest' | 'none';
}

/** Makes a schedule (once its card was approved), within the person's limit; audited. */
export async function createSchedule(
  pool: Pool,
  limits: ScheduleLimits,
  record: RecordScheduleEvent,
  request: ScheduleRequest,
  now: Date,
): Promise<{ ok: true; schedule: ScheduleRow } | { ok: false; message: string }> {
  const read = readWhen(request.when, now, limits.minIntervalSeconds);
  if (!read.ok) return read;
  const next = slotAfter(read.when, now);
  if (!next) return { ok: false, message: `"${request.when}" never runs.` };
  const ownerKey = ownerKeyOf(request.owner);
  const existing = await findSchedule(pool, request.id);
  if (!existing && (await countLiveSchedulesOf(pool, ownerKey)) >= limits.maxPerPerson) {
    return {
      ok: false,
      message: `${ownerLabel(request.owner)} has ${limits.maxPerPerson} schedules already (SCHEDULES_MAX_PER_PERSON): delete one first.`,
    };
  }
  const schedule = await insertSchedule(pool, {
    id: request.id,
    owner: request.owner,
    ownerKey,
    place: request.place,
    conversationId: request.conversationId,
    whenText: request.when.trim(),
    when: read.when,
    task: request.task,
    background: request.background,
    catchUp: request.catchUp,
    nextRunAt: next,
  });
  if (!existing) await record('schedule_created', { schedule: schedule.id, when: schedule.when_text }, request.owner);
  return { ok: true, schedule };
}

/** What a card shows before a schedule exists: the exact schedule, its next three runs, the task. */
export function describeScheduleRequest(
  request: Pick<ScheduleRequest, 'when' | 'task' | 'background' | 'catchUp'>,
  now: Date,
  minIntervalSeconds: number,
): string {
  const read = readWhen(request.when, now, minIntervalSeconds);
  if (!read.ok) return `This schedule cannot be made: ${read.message}`;
  const zone = zoneOf(read.when);
  const slots = nextSlots(read.when, now, 3).map((slot) => `• ${formatSlot(slot, zone)}`);
  return [
    `Schedule: ${request.when.trim()}`,
    `Next runs:`,
    ...slots,
    `Task: ${request.task}`,
    `Runs as the requester, here, under the policy in force at each run${request.background ? ', in the background' : ''}; a missed run is ${request.catchUp === 'none' ? 'skipped' : 'made up once'}.`,
  ].join('\n');
}

/** What a person may do to a schedule: its owner, or an approver where it runs. */
export type IsApprover = (person: Requester, place: ReplyTarget) => boolean;

export type ScheduleChange = 'pause' | 'resume' | 'delete';

/**
 * Pauses, resumes or deletes a schedule for `by`, who must own it or be an approver where it runs
 * (undefined `by`: the operator's shell, audited as `operator`). The answer is for `by` alone.
 */
export async function changeSchedule(
  pool: Pool,
  record: RecordScheduleEvent,
  change: ScheduleChange,
  id: string,
  by: { person: Requester; isApprover: IsApprover } | undefined,
  now: Date,
  operator?: Requester,
): Promise<{ ok: true; text: string } | { ok: false; reason: string }> {
  const schedule = await findSchedule(pool, id);
  if (!schedule) return { ok: false, reason: `There is no schedule ${shortId(id)}.` };
  const refused = refusalFor(schedule, by, 'change');
  if (refused) return { ok: false, reason: refused };
  const actor = by?.person ?? operator;
  const detail = { schedule: schedule.id };
  const name = `Schedule ${shortId(schedule.id)} ("${schedule.when_text}": ${preview(schedule.task, 60)})`;
  switch (change) {
    case 'pause': {
      const paused = await pauseSchedule(pool, id, `paused by ${actor ? ownerLabel(actor) : 'the operator'}`);
      if (!paused) return { ok: false, reason: `${name} is not running, so it cannot be paused.` };
      await record('schedule_paused', { ...detail, reason: paused.paused_reason }, actor);
      return { ok: true, text: `${name} is paused.` };
    }
    case 'resume': {
      const next = slotAfter(whenOf(schedule), now);
      if (!next) return { ok: false, reason: `${name} has no run left to resume.` };
      const resumed = await resumeSchedule(pool, id, next);
      if (!resumed) return { ok: false, reason: `${name} is not paused.` };
      await record('schedule_resumed', detail, actor);
      return { ok: true, text: `${name} runs again; next at ${formatSlot(next, zoneOf(whenOf(schedule)))}.` };
    }
    case 'delete': {
      if (!(await deleteSchedule(pool, id))) return { ok: false, reason: `There is no schedule ${shortId(id)}.` };
      await record('schedule_deleted', detail, actor);
      return { ok: true, text: `${name} is deleted.` };
    }
  }
}

/**
 * Why `by` may not see or change a schedule, or undefined when they may: its owner (the same account
 * in the same workspace) or an approver where it runs; undefined `by` is the operator's shell.
 */
export function refusalFor(
  schedule: ScheduleRow,
  by: { person: Requester; isApprover: IsApprover } | undefined,
  verb: 'change' | 'see the history of',
): string | undefined {
  if (!by || sameAccountHere(schedule.owner, by.person) || by.isApprover(by.person, schedule.place)) return undefined;
  return `Only ${ownerLabel(schedule.owner)} or an approver may ${verb} schedule ${shortId(schedule.id)}.`;
}

/** Schedules as lines: id, state, WHEN, next run, last outcome, task. */
export async function describeSchedules(pool: Pool, schedules: ScheduleRow[]): Promise<string[]> {
  const lines: string[] = [];
  for (const s of schedules) {
    const [last] = await recentRuns(pool, s.id, 1);
    const next =
      s.status === 'active' && s.next_run_at ? `next ${formatSlot(s.next_run_at, zoneOf(whenOf(s)))}` : s.status;
    const state = s.status === 'paused' ? `paused: ${s.paused_reason ?? ''}` : next;
    const outcome = last ? `last ${last.outcome}${last.detail ? ` (${last.detail})` : ''}` : 'not run yet';
    lines.push(
      `${shortId(s.id)}  ${s.when_text}  ${state}  ${outcome}  ${ownerLabel(s.owner)}: ${preview(s.task, 80)}`,
    );
  }
  return lines;
}

/** Schedules one answer lists at most (Discord shows five rows of buttons). */
const LISTED = 10;

/**
 * Whose schedules these are, for listing and the per-person limit: a user id means a person only in
 * the workspace that vouches for it, so a lookalike id from another Slack org is someone else.
 */
export function ownerKeyOf(person: Requester): string {
  return `${personKey(person)}@${person.workspace ?? ''}`;
}

/**
 * `/countersign schedules`: the person's own schedules and, for an approver where they ask, everyone's
 * in that channel; newest first.
 */
export async function schedulesSeenBy(
  pool: Pool,
  person: Requester,
  place: ReplyTarget,
  isApprover: IsApprover,
): Promise<ScheduleListing> {
  const own = await listSchedules(pool, { ownerKey: ownerKeyOf(person) }, LISTED);
  const approver = isApprover(person, place);
  const here = approver ? await listSchedules(pool, { platform: place.platform, channel: place.channel }, LISTED) : [];
  const seen = new Map([...own, ...here].map((s) => [s.id, s]));
  const shown = [...seen.values()].filter((s) => s.status !== 'finished').slice(0, LISTED);
  const lines = await describeSchedules(pool, shown);
  const whose = approver ? 'Your schedules, and everyone’s in this channel' : 'Your schedules';
  return {
    heading: shown.length ? `**${whose}** (${shown.length})` : 'You have no schedules.',
    entries: shown.map((s, i) => ({ id: s.id, text: lines[i]!, paused: s.status === 'paused' })),
  };
}

/** A schedule by its id or the id's first characters (at least 8), as lists show it. */
export async function findByShortId(pool: Pool, prefix: string): Promise<ScheduleRow | undefined> {
  if (/^[0-9a-f-]{36}$/.test(prefix)) return findSchedule(pool, prefix);
  if (!/^[0-9a-f]{8,}$/.test(prefix)) return undefined;
  const all = await listSchedules(pool, {}, 10_000);
  const found = all.filter((s) => s.id.startsWith(prefix));
  return found.length === 1 ? found[0] : undefined;
}
