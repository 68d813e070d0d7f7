import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Requester } from '../core/person.ts';
import { ReplyTarget } from '../core/reply-target.ts';
import { newWorkItem, Priority, type WorkItem } from '../core/work-item.ts';
import { transaction, type Pool, type PoolClient } from '../db/pool.ts';
import { enqueueWorkItem, readReplyOf, readTurnProgress } from '../queue/turn-lifecycle.ts';
import {
  advanceSchedule,
  claimDueSchedule,
  countFailure,
  insertRun,
  pauseSchedule,
  settleRun,
  unsettledRuns,
  whenOf,
  type RunOutcome,
  type RunRow,
  type ScheduleRow,
} from './store.ts';
import { latestSlotUpTo, slotAfter } from './when.ts';

/** What happened to a schedule, for the audit log (approval_audit). */
type ScheduleAuditEvent =
  'schedule_created' | 'schedule_run' | 'schedule_paused' | 'schedule_resumed' | 'schedule_deleted';

/** Writes one audit entry of a schedule. */
export type RecordScheduleEvent = (
  event: ScheduleAuditEvent,
  detail: Record<string, unknown>,
  actor?: Requester,
) => Promise<void>;

export interface SchedulerDeps {
  pool: Pool;
  log: Logger;
  /** The policy in force now: may the owner still use the bot where the schedule runs? */
  mayUse(owner: Requester, place: ReplyTarget): { ok: true } | { ok: false; refusal: string };
  /** Tells the owner something where the schedule runs. */
  tell(place: ReplyTarget, text: string): Promise<void>;
  /**
   * The owner as the platform knows them now where the schedule runs (groups and roles looked up
   * again): undefined when they are no longer a member there; throws when the platform could not say.
   * Absent: the owner as stored (a platform without groups).
   */
  personNow?(owner: Requester, place: ReplyTarget): Promise<Requester | undefined>;
  /**
   * The platform's link to a message a run answered in (`reply.messageId`), for the history; absent,
   * or undefined from it: the run is listed without one.
   */
  linkTo?(reply: ReplyTarget): Promise<string | undefined>;
  record: RecordScheduleEvent;
  /**
   * Whether `place` is a session that lived only as long as its process (the console's terminal) and
   * has closed: a run there has nobody to answer. Absent: every place stays open.
   */
  sessionClosed?(place: ReplyTarget): Promise<boolean>;
}

/** Why a run in a closed session is not made, or is settled: the console that made it has gone. */
const SESSION_CLOSED = 'the console session it was made in has closed, so nobody could read its answer';

/** Consecutive failed runs that pause a schedule. */
const FAILURES_TO_PAUSE = 3;

/**
 * With `catch_up: none`, a slot found later than this is a missed one (the process was down), not a
 * late one: the tick runs every minute, and a busy pool can hold it back a little.
 */
const LATE_GRACE_MS = 5 * 60_000;

/** Schedules handled per tick, so one tick never runs long; the rest wait for the next minute. */
const PER_TICK = 200;

/** What the scheduler did in one tick. */
export interface TickReport {
  enqueued: number;
  settled: number;
  paused: number;
}

/**
 * One pass of the scheduler (the `countersign_schedules` job, every minute): the outcomes of runs that
 * came to rest are recorded, then every schedule whose slot has come makes one work item. `now` is the
 * clock the slots are judged by, a parameter so tests can move it.
 *
 * Exactly once per slot: a due schedule is claimed `FOR UPDATE SKIP LOCKED` in the transaction that
 * records its run (primary key schedule + slot), enqueues the work item and moves it to its next
 * slot; a second scheduler racing skips it, and would find the slot taken if it did not.
 */
export async function tick(deps: SchedulerDeps, now: Date): Promise<TickReport> {
  const report: TickReport = { enqueued: 0, settled: 0, paused: 0 };
  for (const run of await unsettledRuns(deps.pool, PER_TICK)) {
    const settled = await settleFinishedRun(deps, run);
    if (settled) report.settled += 1;
    if (settled === 'paused') report.paused += 1;
  }
  for (let i = 0; i < PER_TICK; i++) {
    const done = await transaction(deps.pool, (client) => runDueSchedule(client, deps, now));
    if (!done) break;
    if (done.enqueued) report.enqueued += 1;
    if (done.after) {
      report.paused += done.after.paused ? 1 : 0;
      await done.after.effects().catch((error: unknown) => deps.log.warn({ err: error }, 'schedule follow-up failed'));
    }
  }
  return report;
}

interface DueOutcome {
  enqueued: boolean;
  /** What to do once the transaction committed: tell the owner, audit. */
  after?: { paused: boolean; effects: () => Promise<void> };
}

async function runDueSchedule(client: PoolClient, deps: SchedulerDeps, now: Date): Promise<DueOutcome | undefined> {
  const schedule = await claimDueSchedule(client, now);
  if (!schedule?.next_run_at) return undefined;
  const when = whenOf(schedule);
  const slot = latestSlotUpTo(when, schedule.next_run_at, now);
  const next = slotAfter(when, now);
  if (schedule.catch_up === 'none' && now.getTime() - slot.getTime() > LATE_GRACE_MS) {
    // Missed while nothing ran: skipped, never made up.
    await advanceSchedule(client, schedule.id, next);
    deps.log.info({ scheduleId: schedule.id, slot }, 'skipped a missed slot (catch_up: none)');
    return { enqueued: false };
  }
  if (await deps.sessionClosed?.(schedule.place)) {
    // The session never comes back: the schedule pauses at once, and nobody is left there to tell.
    await insertRun(client, {
      scheduleId: schedule.id,
      slot,
      workItemId: null,
      outcome: 'failed',
      detail: SESSION_CLOSED,
    });
    await advanceSchedule(client, schedule.id, next);
    const paused = await pauseSchedule(client, schedule.id, SESSION_CLOSED);
    if (!paused) return { enqueued: false };
    const detail = { schedule: schedule.id, reason: SESSION_CLOSED };
    return { enqueued: false, after: { paused: true, effects: () => deps.record('schedule_paused', detail) } };
  }
  const current = await ownerNow(deps, schedule);
  if ('failed' in current) return failLookup(client, deps, { schedule, slot, next }, current.failed);
  const allowed = current.owner
    ? deps.mayUse(current.owner, schedule.place)
    : { ok: false as const, refusal: 'they are no longer a member there' };
  if (!allowed.ok) {
    const reason = `${ownerLabel(schedule.owner)} may no longer use the bot here (${allowed.refusal})`;
    await insertRun(client, { scheduleId: schedule.id, slot, workItemId: null, outcome: 'refused', detail: reason });
    await pauseSchedule(client, schedule.id, reason);
    return { enqueued: false, after: { paused: true, effects: () => pausedEffects(deps, schedule, reason) } };
  }
  // The run asks as the owner is now: the turn's own policy checks see today's groups too.
  const item = runItem({ ...schedule, owner: current.owner! }, slot);
  const fresh = await insertRun(client, {
    scheduleId: schedule.id,
    slot,
    workItemId: item.id,
    outcome: 'running',
    reply: item.reply,
  });
  if (fresh) await enqueueWorkItem(client, item);
  await advanceSchedule(client, schedule.id, next);
  if (!fresh) return { enqueued: false };
  const detail = { schedule: schedule.id, slot: slot.toISOString(), workItem: item.id };
  return {
    enqueued: true,
    after: { paused: false, effects: () => deps.record('schedule_run', detail, schedule.owner) },
  };
}

/** How long a run waits for the platform to say who the owner is now (the schedule's row is locked). */
const LOOKUP_TIMEOUT_MS = 10_000;

/**
 * The owner as the platform knows them now — never the groups captured when the schedule was made,
 * which could keep a person removed from a role running under it — or why the platform could not say.
 */
async function ownerNow(
  deps: SchedulerDeps,
  schedule: ScheduleRow,
): Promise<{ owner: Requester | undefined } | { failed: string }> {
  if (!deps.personNow) return { owner: schedule.owner };
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${LOOKUP_TIMEOUT_MS / 1000} s`)), LOOKUP_TIMEOUT_MS);
  });
  try {
    return { owner: await Promise.race([deps.personNow(schedule.owner, schedule.place), timedOut]) };
  } catch (error) {
    deps.log.warn({ err: error, scheduleId: schedule.id }, 'could not look up a schedule owner’s groups');
    return { failed: (error as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A slot whose owner could not be looked up: the run fails with the reason (it is not run with the
 * groups from when the schedule was made), counts as a failure (three in a row pause), and the
 * schedule moves on.
 */
async function failLookup(
  client: PoolClient,
  deps: SchedulerDeps,
  due: { schedule: ScheduleRow; slot: Date; next: Date | undefined },
  error: string,
): Promise<DueOutcome> {
  const { schedule, slot, next } = due;
  const detail = `could not look up ${ownerLabel(schedule.owner)}'s groups on the platform (${error}); not run with the groups from when it was made`;
  const fresh = await insertRun(client, { scheduleId: schedule.id, slot, workItemId: null, outcome: 'failed', detail });
  await advanceSchedule(client, schedule.id, next);
  if (!fresh || (await countFailure(client, schedule.id, true)) < FAILURES_TO_PAUSE) return { enqueued: false };
  const reason = `its last ${FAILURES_TO_PAUSE} runs failed (the last: ${detail})`;
  const paused = await pauseSchedule(client, schedule.id, reason);
  if (!paused) return { enqueued: false };
  return { enqueued: false, after: { paused: true, effects: () => pausedEffects(deps, paused, reason) } };
}

/** A run's work item: the owner asks, where the schedule was made, at NORMAL (LOW in the background). */
function runItem(schedule: ScheduleRow, slot: Date): WorkItem {
  const { messageId: _posted, ...place } = schedule.place;
  return newWorkItem({
    id: randomUUID(),
    type: 'CUSTOM',
    priority: schedule.background ? Priority.LOW : Priority.NORMAL,
    conversationId: schedule.conversation_id,
    requester: schedule.owner,
    input: {
      prompt: `(A scheduled run: "${schedule.when_text}", the slot of ${slot.toISOString()}. The task, as ${ownerLabel(schedule.owner)} set it:)\n\n${schedule.task}`,
    },
    payload: { scheduleId: schedule.id, slot: slot.toISOString() },
    // Nobody is watching: a card this run posts mentions the owner (docs/schedules.md).
    reply: { ...place, unattended: true },
    placeholder: '…',
  });
}

/** Reads where a run's turn came to rest and records it; 'paused' when it was the third failure in a row. */
async function settleFinishedRun(deps: SchedulerDeps, run: RunRow): Promise<'settled' | 'paused' | undefined> {
  const progress = run.work_item_id ? await readTurnProgress(deps.pool, run.work_item_id) : undefined;
  const unfinished = progress && ['queued', 'running', 'awaiting_approval'].includes(progress.status);
  // A run whose console session closed is never answered: settled, rather than "running" for ever.
  const abandoned = unfinished && run.reply !== null && (await deps.sessionClosed?.(run.reply)) === true;
  if (unfinished && !abandoned) return undefined;
  const [outcome, detail] = abandoned ? (['failed', SESSION_CLOSED] as const) : outcomeOf(progress);
  const link = run.work_item_id ? await answerLink(deps, run.work_item_id) : undefined;
  if (!(await settleRun(deps.pool, run, outcome, detail, link))) return undefined;
  // An expired card or a stopped run says nothing about whether the task works: the count stands.
  if (outcome !== 'done' && outcome !== 'failed') return 'settled';
  const failures = await countFailure(deps.pool, run.schedule_id, outcome === 'failed');
  if (failures < FAILURES_TO_PAUSE) return 'settled';
  const reason = `its last ${failures} runs failed (the last: ${detail ?? 'no reason given'})`;
  const paused = await pauseSchedule(deps.pool, run.schedule_id, reason);
  if (!paused) return 'settled';
  await pausedEffects(deps, paused, reason).catch((error: unknown) =>
    deps.log.warn({ err: error, scheduleId: paused.id }, 'could not tell the owner a schedule paused'),
  );
  return 'paused';
}

/** The link to the message a run's turn answered in (its first reply message, in the run's thread). */
async function answerLink(deps: SchedulerDeps, workItemId: string): Promise<string | undefined> {
  if (!deps.linkTo) return undefined;
  const stored = ReplyTarget.safeParse((await readReplyOf(deps.pool, workItemId))?.reply);
  if (!stored.success || !stored.data.messageId) return undefined;
  return deps.linkTo(stored.data).catch((error: unknown) => {
    deps.log.warn({ err: error, workItemId }, 'could not get the link to a scheduled run’s answer');
    return undefined;
  });
}

function outcomeOf(
  progress: { status: string; error: string | null } | undefined,
): [Exclude<RunOutcome, 'running'>, string | undefined] {
  if (!progress) return ['cancelled', 'the run’s work item is gone'];
  switch (progress.status) {
    case 'done':
      return ['done', undefined];
    case 'failed':
      return ['failed', progress.error ?? undefined];
    default:
      return progress.error === 'approval expired'
        ? ['expired', 'waited for approval, expired']
        : ['cancelled', progress.error ?? undefined];
  }
}

/** Tells the owner why their schedule paused, where it runs, and audits it. */
async function pausedEffects(deps: SchedulerDeps, schedule: ScheduleRow, reason: string): Promise<void> {
  await deps.record('schedule_paused', { schedule: schedule.id, reason });
  const { messageId: _posted, ...place } = schedule.place;
  await deps.tell(
    place,
    `⏸️ ${ownerLabel(schedule.owner)}: your schedule ${shortId(schedule.id)} ("${schedule.when_text}": ${preview(schedule.task)}) is paused: ${reason}. \`/countersign schedules\` resumes or deletes it.`,
  );
}

export function shortId(id: string): string {
  return id.slice(0, 8);
}

export function ownerLabel(owner: Requester & { displayName?: string }): string {
  return owner.displayName ?? `${owner.platform}:${owner.userId}`;
}

export function preview(text: string, max = 120): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
