import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Pool } from '../db/pool.ts';
import type { ApprovalService } from '../approval/service.ts';
import { audit } from '../approval/store.ts';
import type { OutboundRegistry } from '../reply/outbound.ts';
import type { AnyBuiltinTool } from '../agent/tools/tool.ts';
import type { Requester } from '../core/person.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import { changeSchedule, schedulesSeenBy, type ScheduleChange, type ScheduleLimits } from '../schedules/manage.ts';
import { tick, type RecordScheduleEvent, type SchedulerDeps } from '../schedules/scheduler.ts';
import { createScheduleTool } from '../schedules/tool.ts';
import { readScheduleWorkCommand } from '../schedules/command.ts';
import { scheduleHistory } from '../schedules/history.ts';
import { durationSeconds } from '../schedules/when.ts';
import type { PlatformDirectory } from '../core/platform-rules.ts';
import { sessionIsOpen } from '../queue/session-turns.ts';
import type { Cleanups } from './cleanups.ts';

/**
 * How often each worker process looks for due schedules. Every process ticks: a slot is claimed by
 * one of them (src/schedules/scheduler.ts), and a process that dies leaves the others ticking.
 */
const TICK_MS = 30_000;

/** SCHEDULES_MAX_PER_PERSON and SCHEDULE_MIN_INTERVAL, read. */
function scheduleLimits(config: Pick<Config, 'SCHEDULES_MAX_PER_PERSON' | 'SCHEDULE_MIN_INTERVAL'>): ScheduleLimits {
  return {
    maxPerPerson: config.SCHEDULES_MAX_PER_PERSON,
    minIntervalSeconds: durationSeconds(config.SCHEDULE_MIN_INTERVAL) ?? 300,
  };
}

/** `schedule_task`, for the tool registry. */
export function scheduleTools(
  config: Pick<Config, 'SCHEDULES_MAX_PER_PERSON' | 'SCHEDULE_MIN_INTERVAL'>,
  pool: Pool,
): AnyBuiltinTool[] {
  return [createScheduleTool(pool, scheduleLimits(config), recordScheduleEvent(pool))];
}

/** What a person's chat commands and buttons may do to schedules: propose one, list them, change one. */
export function scheduleVerbs(config: Config, pool: Pool, approvals: ApprovalService) {
  const isApprover = (person: Requester, place: ReplyTarget) => approvals.isApprover(person, place);
  return {
    scheduleCommand: (text: string) =>
      readScheduleWorkCommand(text, new Date(), scheduleLimits(config).minIntervalSeconds),
    schedules: (person: Requester, place: ReplyTarget) => schedulesSeenBy(pool, person, place, isApprover),
    changeSchedule: (change: ScheduleChange | 'history', id: string, by: Requester) =>
      change === 'history'
        ? scheduleHistory(pool, id, { person: by, isApprover })
        : changeSchedule(pool, recordScheduleEvent(pool), change, id, { person: by, isApprover }, new Date()),
  };
}

/**
 * The scheduler's dependencies: the policy in force, the place's outbound (to tell the owner, look
 * their groups up again, link a run's answer), the audit log.
 */
export function schedulerDeps(wiring: {
  pool: Pool;
  log: Logger;
  approvals: ApprovalService;
  outbounds: OutboundRegistry;
  /** The platforms' rules: which keep their sessions only while their process lives (the console). */
  platforms?: PlatformDirectory;
}): SchedulerDeps {
  const { pool, approvals, outbounds, platforms } = wiring;
  return {
    pool,
    sessionClosed: async (place) =>
      platforms?.has(place.platform) === true &&
      platforms.rulesOf(place.platform).operatorTerminal &&
      !(await sessionIsOpen(pool, place.channel)),
    log: wiring.log.child({ component: 'scheduler' }),
    mayUse: (owner, place) => approvals.mayUse(owner, place),
    tell: async (place, text) => {
      await outbounds.for(place).post(place, text);
    },
    // Groups and roles as the platform says now, not as they were when the schedule was made.
    personNow: async (owner, place) => {
      const outbound = outbounds.for(place);
      // Groups the policy names none of are not looked up (a free Slack workspace has none to list).
      const groups = approvals.namesGroups(place.platform);
      return outbound.personNow ? outbound.personNow(owner, place, { groups }) : owner;
    },
    linkTo: async (reply) => {
      const outbound = outbounds.for(reply);
      return reply.messageId && outbound.linkTo ? outbound.linkTo(reply, reply.messageId) : undefined;
    },
    record: recordScheduleEvent(pool),
  };
}

export function recordScheduleEvent(pool: Pool): RecordScheduleEvent {
  return (event, detail, actor) => audit(pool, { event, detail, ...(actor ? { actor } : {}) });
}

/** Ticks the scheduler every TICK_MS in a process that runs turns, until the process stops. */
export function startScheduler(
  wiring: {
    config: Config;
    pool: Pool;
    log: Logger;
    approvals: ApprovalService;
    outbounds: OutboundRegistry;
    platforms?: PlatformDirectory;
  },
  cleanups: Cleanups,
): void {
  const deps = schedulerDeps(wiring);
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(() =>
      tick(deps, new Date()).catch((error: unknown) => deps.log.warn({ err: error }, 'scheduler tick failed')),
    );
  }, TICK_MS);
  timer.unref();
  cleanups.add(async () => {
    clearInterval(timer);
    await running;
  });
}
