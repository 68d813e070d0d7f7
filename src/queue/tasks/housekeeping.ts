import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';

export const HOUSEKEEPING_TASK = 'countersign_housekeeping';

/**
 * Every minute, at IDLE priority on the background pool. The job key makes overlapping schedules
 * (several processes, a slow run) collapse into one pending job.
 */
export const HOUSEKEEPING_CRONTAB = `* * * * * ${HOUSEKEEPING_TASK} ?priority=10000&jobKey=${HOUSEKEEPING_TASK}&jobKeyMode=replace`;

export interface Housekeeper {
  expireStale(): Promise<number>;
}

export function createHousekeepingTask(deps: { approvals: Housekeeper; log: Logger }): Task {
  return async () => {
    const expired = await deps.approvals.expireStale();
    if (expired > 0) deps.log.info({ expired }, 'expired stale approval requests');
  };
}
