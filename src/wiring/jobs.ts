import type { TaskList } from 'graphile-worker';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Config } from '../config.ts';
import type { Pool } from '../db/pool.ts';
import { SHOW_CARD_TASK, type ApprovalService } from '../approval/service.ts';
import { createHousekeepingTask, HOUSEKEEPING_CRONTAB, HOUSEKEEPING_TASK } from '../queue/tasks/housekeeping.ts';
import type { TurnEvents } from '../queue/turn-events.ts';

/** graphile-worker crontab for the background pool: housekeeping every minute. */
export const BACKGROUND_CRONTAB = HOUSEKEEPING_CRONTAB;

/** The interactive pool's jobs besides turns: posting a parked turn's approval card. */
export function interactiveJobs(approvals: ApprovalService): TaskList {
  return {
    [SHOW_CARD_TASK]: async (payload) => {
      const { envelopeId } = z.object({ envelopeId: z.uuid() }).parse(payload);
      await approvals.showPendingCard(envelopeId);
    },
  };
}

/** The background pool's jobs besides turns: housekeeping (expiry, retention). */
export function backgroundJobs(deps: {
  pool: Pool;
  approvals: ApprovalService;
  log: Logger;
  events: TurnEvents;
  config: Config;
}): TaskList {
  const { config } = deps;
  return {
    [HOUSEKEEPING_TASK]: createHousekeepingTask({
      pool: deps.pool,
      approvals: deps.approvals,
      log: deps.log,
      events: deps.events,
      settings: {
        historyRetentionDays: config.HISTORY_RETENTION_DAYS,
        auditRetentionDays: config.AUDIT_RETENTION_DAYS,
      },
    }),
  };
}
