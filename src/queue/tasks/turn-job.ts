import { z } from 'zod';
import type { JobHandler, JobOptions } from './job.ts';

/** What a turn's job carries: only the id; the work item itself lives in countersign.work_items. */
export const WorkItemJobPayload = z.object({ workItemId: z.uuid() });
export type WorkItemJobPayload = z.infer<typeof WorkItemJobPayload>;

/** Both turn tasks' options; the priority is the work item's own (src/core/work-item.ts). */
export const TURN_JOB_OPTIONS: JobOptions = { maxAttempts: 25 };

/**
 * The database functions that add a turn's job when a conversation is idle or moves to its next
 * item (migrations 004, 006 and 007: the task is chosen by `turnJobFor`'s rule and passed in).
 */
export const TURN_JOB_SQL_ENQUEUERS = ['countersign.enqueue_work_item', 'countersign.advance_conversation'] as const;

/**
 * A turn task's handler is the work-item task (tasks/run-work-item.ts), given by the wiring: that
 * task runs the turn through turn-lifecycle.ts, which enqueues turn jobs from this table, so
 * importing it here would close an import circle.
 */
export interface TurnJobDeps {
  runWorkItem: JobHandler<WorkItemJobPayload>;
}
