import { z } from 'zod';
import { Requester } from '../../core/person.ts';
import { Priority } from '../../core/work-item.ts';
import { defineJob } from './job.ts';

/**
 * Shares a change card's full diff as a file in its thread (src/approval/change-diff.ts, given by the
 * wiring). A job, not the click's handler: the worker has the repositories, and an upload that fails
 * is retried. HIGH: the person who clicked waits for it.
 */
export const shareChangeDiffJob = defineJob({
  name: 'countersign_share_change_diff',
  pool: 'interactive',
  payload: z.object({ envelopeId: z.uuid(), by: Requester }),
  options: { maxAttempts: 5, priority: Priority.HIGH },
  createHandler:
    ({ shareChangeDiff }: { shareChangeDiff(envelopeId: string, by: Requester): Promise<void> }) =>
    async ({ envelopeId, by }) => {
      await shareChangeDiff(envelopeId, by);
    },
});
