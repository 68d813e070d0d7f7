import { ReplyTarget } from '../core/reply-target.ts';
import { TEXTS } from '../core/texts.ts';
import { expireParkedTurn } from '../queue/turn-lifecycle.ts';
import type { ApprovalContext } from './context.ts';
import { refreshCard } from './show.ts';
import { approvalWaitSpan, endApprovalWait } from './approval-wait.ts';
import { audit, expireEnvelopes } from './store.ts';
import { parseCalls, type EnvelopeRow } from './envelope.ts';

/**
 * Expires stale envelopes (housekeeping): cards say so, turns end with a clear message, nothing runs.
 * Returns how many expired.
 */
export async function expireStale(ctx: ApprovalContext): Promise<number> {
  const expired = await expireEnvelopes(ctx.pool);
  for (const envelope of expired) {
    await audit(ctx.pool, { envelopeId: envelope.id, nonce: envelope.nonce, event: 'expired' });
    endApprovalWait(approvalWaitSpan(envelope), envelope, 'expired');
    await refreshCard(ctx, envelope, 'expired');
    // Told separately from the card: the card may sit far up the conversation, out of sight.
    try {
      const target = ReplyTarget.parse(envelope.reply);
      await ctx.outbounds.for(target).post({ ...target, messageId: undefined }, TEXTS.approvalExpired);
    } catch (error) {
      ctx.log.warn({ err: error, envelopeId: envelope.id }, 'could not announce an expired approval');
    }
    await expireParkedTurn(ctx.pool, envelope.work_item_id, envelope.conversation_id);
    await afterExpiry(ctx, envelope);
  }
  return expired.length;
}

/** What the expired calls' tools do when their card expires (`onExpired`): never blocks the others. */
async function afterExpiry(ctx: ApprovalContext, envelope: EnvelopeRow): Promise<void> {
  for (const call of parseCalls(envelope)) {
    const tool = ctx.tools.get(call.name);
    if (!tool?.onExpired) continue;
    const log = ctx.log.child({ tool: call.name, toolCallId: call.id, envelopeId: envelope.id });
    try {
      await tool.onExpired(call.args, {
        workItemId: envelope.work_item_id,
        conversationId: envelope.conversation_id,
        requester: envelope.requester,
        signal: AbortSignal.timeout(60_000),
        log,
      });
    } catch (error) {
      log.warn({ err: error }, 'could not clean up after an expired call');
    }
  }
}
