import { defineJob } from './job.ts';
import { TURN_JOB_OPTIONS, TURN_JOB_SQL_ENQUEUERS, WorkItemJobPayload, type TurnJobDeps } from './turn-job.ts';

/** A turn of NORMAL priority or lower (scheduled, bulk): it never takes an interactive slot. */
export const backgroundTurnJob = defineJob({
  name: 'countersign_background',
  pool: 'background',
  payload: WorkItemJobPayload,
  options: TURN_JOB_OPTIONS,
  enqueuedInSqlBy: TURN_JOB_SQL_ENQUEUERS,
  createHandler: ({ runWorkItem }: TurnJobDeps) => runWorkItem,
});
