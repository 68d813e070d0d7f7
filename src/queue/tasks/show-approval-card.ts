import { z } from 'zod';
import { Priority } from '../../core/work-item.ts';
import { defineJob } from './job.ts';

/**
 * Shows a parked turn's approval card (src/approval/show.ts, given by the wiring: the queue does not
 * import approvals). Added in the transaction that stores the envelope (`scheduleApprovalCard`), so a
 * worker dying right after parking can't leave an envelope nobody sees; CRITICAL, because a person
 * is waiting for the card. In the delivery pool: posting the card can wait for a platform's rate limit
 * (a Discord channel's budget, shared with its replies' edits), which must never hold a turn's slot;
 * so can its wait for the parked turn's text, when that text still has messages to post above it.
 */
export const showApprovalCardJob = defineJob({
  name: 'countersign_show_approval_card',
  pool: 'delivery',
  payload: z.object({ envelopeId: z.uuid() }),
  options: { maxAttempts: 25, priority: Priority.CRITICAL },
  createHandler:
    ({ showPendingCard }: { showPendingCard(envelopeId: string, signal: AbortSignal): Promise<void> }) =>
    async ({ envelopeId }, helpers) => {
      await showPendingCard(envelopeId, helpers.abortSignal ?? new AbortController().signal);
    },
});
