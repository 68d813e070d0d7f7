import { z } from 'zod';
import { Priority } from '../core/work-item.ts';

/** What a graphile-worker job carries: only the id; the work item itself lives in countersign.work_items. */
export const WorkItemJobPayload = z.object({ workItemId: z.uuid() });
export type WorkItemJobPayload = z.infer<typeof WorkItemJobPayload>;

/** Interactive work runs in its own pool of slots so it never waits behind background work. */
export const INTERACTIVE_TASK = 'countersign_interactive';
export const BACKGROUND_TASK = 'countersign_background';

export function taskFor(priority: number): string {
  return priority <= Priority.HIGH ? INTERACTIVE_TASK : BACKGROUND_TASK;
}
