import type { Queryable } from '../../db/pool.ts';
import type { Requester } from '../../core/person.ts';
import type { WorkItem } from '../../core/work-item.ts';
import { toJsonb } from '../../core/storable-text.ts';
import { JOBS, turnJobFor } from '../tasks/index.ts';

/**
 * The jobs the lifecycle adds with graphile_worker.add_job directly (the enqueue and settle functions
 * of migrations/ add turn jobs themselves). Each is added in the statement, or the transaction, that
 * makes what it works on.
 */

/**
 * Schedules a job for a work item that is its conversation's head already (a turn handed over), ranked
 * like every turn job by how busy its place is (countersign.turn_job_priority, migration 028) and
 * flagged `backlog` when that place has other work outstanding (countersign.turn_job_flags), which
 * keeps it out of the express pool.
 */
export async function addWorkItemJob(db: Queryable, item: Pick<WorkItem, 'id' | 'priority'>): Promise<void> {
  const job = turnJobFor(item.priority);
  await db.query(
    `SELECT graphile_worker.add_job($1::text, json_build_object('workItemId', $2::text),
       priority => r.rank::smallint, flags => countersign.turn_job_flags(r.rank, $4::int), max_attempts => $3::int)
     FROM (SELECT countersign.turn_job_priority($2::uuid) AS rank) r`,
    [job.name, item.id, job.options.maxAttempts, item.priority],
  );
}

/** Schedules the job that shows a pending approval card (src/queue/tasks/show-approval-card.ts). */
export async function addShowCardJob(db: Queryable, envelopeId: string): Promise<void> {
  const { name, options } = JOBS.showApprovalCard;
  await db.query(
    `SELECT graphile_worker.add_job($1::text, json_build_object('envelopeId', $2::text), priority => $3::int, max_attempts => $4::int)`,
    [name, envelopeId, options.priority, options.maxAttempts],
  );
}

/** Schedules sharing a change card's full diff, asked for by `by`; keyed by the card, so pending shares merge. */
export async function addDiffShareJob(db: Queryable, envelopeId: string, by: Requester): Promise<void> {
  const { name, options } = JOBS.shareChangeDiff;
  await db.query(
    `SELECT graphile_worker.add_job($1::text, json_build_object('envelopeId', $2::text, 'by', $3::json),
       priority => $4::int, max_attempts => $5::int, job_key => $6::text, job_key_mode => 'preserve_run_at')`,
    [name, envelopeId, toJsonb(by), options.priority, options.maxAttempts, `share-diff:${envelopeId}`],
  );
}
