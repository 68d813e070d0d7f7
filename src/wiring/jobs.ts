import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Pool } from '../db/pool.ts';
import type { ApprovalService } from '../approval/service.ts';
import { workerPoolTasks, type WorkerPoolTasks } from '../queue/tasks/index.ts';
import type { JobHandler } from '../queue/tasks/job.ts';
import type { WorkItemJobPayload } from '../queue/tasks/turn-job.ts';
import type { TurnEvents } from '../queue/turn-events.ts';
import type { CodeWork } from './repos.ts';
import type { PersonalConnections } from '../connections/service.ts';
import { sweepExpiredStates } from '../connections/store.ts';
import { releaseExpiredReservations, spendDeadProcessLeases } from '../budgets/store.ts';
import type { OutboxDeliverer } from '../reply/outbox-deliverer.ts';

/**
 * Every job's handler, given what it needs: turns, approval cards (approvals, which the queue does
 * not import) and housekeeping (expiry, retention).
 */
export function jobTasks(deps: {
  runWorkItem: JobHandler<WorkItemJobPayload>;
  pool: Pool;
  approvals: ApprovalService;
  log: Logger;
  events: TurnEvents;
  config: Config;
  codeWork?: CodeWork;
  connections?: PersonalConnections;
  /** This process's reply outbox: a card is posted below its parked turn's text. */
  outbox?: OutboxDeliverer;
}): WorkerPoolTasks {
  const { config, approvals, outbox } = deps;
  const turn = { runWorkItem: deps.runWorkItem };
  return workerPoolTasks({
    interactiveTurn: turn,
    backgroundTurn: turn,
    showApprovalCard: {
      showPendingCard: (envelopeId, signal) =>
        approvals.showPendingCard(envelopeId, outbox && ((workItemId) => outbox.awaitPostsOf(workItemId, signal))),
    },
    shareChangeDiff: { shareChangeDiff: (envelopeId, by) => approvals.shareChangeDiff(envelopeId, by) },
    housekeeping: {
      pool: deps.pool,
      approvals,
      log: deps.log,
      events: deps.events,
      ...(deps.codeWork ? { sweepWorktrees: deps.codeWork.sweep } : {}),
      ...(deps.connections ? { sweepConnectStates: () => sweepExpiredStates(deps.pool) } : {}),
      releaseBudgetReservations: async () =>
        (await releaseExpiredReservations(deps.pool)) + (await spendDeadProcessLeases(deps.pool)),
      settings: {
        historyRetentionDays: config.HISTORY_RETENTION_DAYS,
        auditRetentionDays: config.AUDIT_RETENTION_DAYS,
      },
    },
  });
}
