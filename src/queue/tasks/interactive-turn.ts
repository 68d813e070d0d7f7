import { defineJob } from './job.ts';
import { TURN_JOB_OPTIONS, TURN_JOB_SQL_ENQUEUERS, WorkItemJobPayload, type TurnJobDeps } from './turn-job.ts';

/** A turn or continuation of CRITICAL or HIGH priority: a person is waiting for it. */
export const interactiveTurnJob = defineJob({
  name: 'countersign_interactive',
  pool: 'interactive',
  payload: WorkItemJobPayload,
  options: TURN_JOB_OPTIONS,
  enqueuedInSqlBy: TURN_JOB_SQL_ENQUEUERS,
  createHandler: ({ runWorkItem }: TurnJobDeps) => runWorkItem,
});
