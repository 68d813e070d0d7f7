import type { Logger } from 'pino';
import { z } from 'zod';
import { Priority } from '../../core/work-item.ts';
import type { Pool } from '../../db/pool.ts';
import type { TurnEvents } from '../turn-events.ts';
import {
  cleanGraphileWorker,
  pruneAudit,
  pruneFinishedCheckpoints,
  pruneHistory,
  pruneIdleConversations,
  pruneIdleRateBuckets,
  pruneInboundEvents,
} from '../housekeeping-sql.ts';
import { defineJob, type JobHandler } from './job.ts';

/** Also named by test/architecture/held-jobs.ts; elsewhere use `housekeepingJob.name`. */
const HOUSEKEEPING_TASK = 'countersign_housekeeping';

interface Housekeeper {
  expireStale(): Promise<number>;
}

interface HousekeepingSettings {
  /** Days of conversation history and finished work to keep; 0 keeps everything. */
  historyRetentionDays: number;
  /** Days of approval audit to keep; 0 keeps everything. */
  auditRetentionDays: number;
}

interface HousekeepingDeps {
  pool: Pool;
  approvals: Housekeeper;
  settings: HousekeepingSettings;
  log: Logger;
  /** Told which conversations expired, so adapters can close them on the platform. */
  events?: TurnEvents;
  /** Removes the repository worktrees of conversations that are gone (code work, src/repos). */
  sweepWorktrees?: () => Promise<number>;
  /** Removes Connect links' states long past their expiry (per-person connections, src/connections). */
  sweepConnectStates?: () => Promise<number>;
  /**
   * Deletes budget reservations whose lease ran out (their worker died mid-call) and counts as spent
   * what dead processes' leases held (src/budgets).
   */
  releaseBudgetReservations?: () => Promise<number>;
}

/**
 * Every minute, at IDLE priority on the background pool. The job key makes overlapping schedules
 * (several processes, a slow run) collapse into one pending job. The payload is graphile-worker's
 * cron stamp, which housekeeping does not need.
 */
export const housekeepingJob = defineJob({
  name: HOUSEKEEPING_TASK,
  pool: 'background',
  payload: z.object({}),
  options: { maxAttempts: 25, priority: Priority.IDLE, jobKey: HOUSEKEEPING_TASK, jobKeyMode: 'replace' },
  schedule: '* * * * *',
  createHandler: createHousekeepingHandler,
});

function createHousekeepingHandler(deps: HousekeepingDeps): JobHandler<unknown> {
  return async () => {
    const { pool, settings } = deps;
    const expired = await deps.approvals.expireStale();
    const checkpoints = await pruneFinishedCheckpoints(pool);
    let history = 0;
    if (settings.historyRetentionDays > 0) {
      history += await pruneHistory(pool, settings.historyRetentionDays);
      const expiredConversations = await pruneIdleConversations(pool, settings.historyRetentionDays);
      history += expiredConversations.length;
      if (expiredConversations.length) deps.events?.emit('conversationsExpired', { ids: expiredConversations });
    }
    const audit = settings.auditRetentionDays > 0 ? await pruneAudit(pool, settings.auditRetentionDays) : 0;
    // Both tables gain a row per inbound event or per channel replied in, and would grow forever.
    const inboundEvents = await pruneInboundEvents(pool);
    const rateBuckets = await pruneIdleRateBuckets(pool);
    await cleanGraphileWorker(pool);
    // After the conversations expired above: their worktrees go in the same run.
    const worktrees = (await deps.sweepWorktrees?.()) ?? 0;
    const connectStates = (await deps.sweepConnectStates?.()) ?? 0;
    const reservations = (await deps.releaseBudgetReservations?.()) ?? 0;
    const swept = worktrees + connectStates + reservations;
    if (expired + checkpoints + history + audit + inboundEvents + rateBuckets + swept > 0) {
      deps.log.info(
        { expired, checkpoints, history, audit, inboundEvents, rateBuckets, worktrees, connectStates, reservations },
        'housekeeping',
      );
    }
  };
}
