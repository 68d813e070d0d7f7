import type { Requester } from '../core/person.ts';
import { personKey } from '../core/person.ts';
import { ReplyTarget } from '../core/reply-target.ts';
import { NONCE_PATTERN } from '../core/buttons.ts';
import { scheduleDiffShare } from '../queue/turn-lifecycle.ts';
import type { ApprovalContext } from './context.ts';
import { parseCalls, type EnvelopeRow } from './envelope.ts';
import { findEnvelopeById, findEnvelopeByNonce } from './store.ts';

/**
 * A change card's "Full diff" (docs/code-work.md): the click is checked and answered at once, and a
 * job on a worker — which has the repositories — shares the diff as a file in the card's thread.
 * The diff is never inlined in a card: it can be megabytes.
 */

export type { ChangeDiffSource } from './context.ts';

/** The merge call of a change card, if the envelope is one. */
function changeCallOf(ctx: ApprovalContext, envelope: EnvelopeRow) {
  const calls = parseCalls(envelope);
  const only = calls.length === 1 ? calls[0] : undefined;
  return only && ctx.tools.get(only.name)?.kind === 'merge' ? only : undefined;
}

/**
 * The Full diff click: a person who may use the bot where the card is gets the diff shared there
 * (one share pending per card, however often it is clicked).
 */
export async function requestFullDiff(
  ctx: ApprovalContext,
  nonce: string,
  by: Requester,
): Promise<{ ok: true; text: string } | { ok: false; reason: string }> {
  const envelope = NONCE_PATTERN.test(nonce) ? await findEnvelopeByNonce(ctx.pool, nonce) : undefined;
  if (!envelope || !changeCallOf(ctx, envelope)) return { ok: false, reason: 'This is not a change card any more.' };
  const admitted = ctx.gate.mayUse(by, ReplyTarget.parse(envelope.reply));
  if (!admitted.ok) return { ok: false, reason: admitted.refusal };
  await scheduleDiffShare(ctx.pool, envelope.id, by);
  return { ok: true, text: 'The full diff will be posted in this thread as a file.' };
}

/** The share job: uploads the diff into the card's thread, or says there why it cannot. */
export async function shareChangeDiff(ctx: ApprovalContext, envelopeId: string, by: Requester): Promise<void> {
  const envelope = await findEnvelopeById(ctx.pool, envelopeId);
  const call = envelope && changeCallOf(ctx, envelope);
  if (!envelope || !call) return;
  const target: ReplyTarget = { ...ReplyTarget.parse(envelope.reply), messageId: undefined };
  const outbound = ctx.outbounds.for(target);
  const file = ctx.changeDiff
    ? await ctx.changeDiff(call.args, envelope.conversation_id)
    : { problem: 'no repositories are configured here' };
  if ('problem' in file) {
    await outbound.post(target, `I could not share the full diff: ${file.problem}.`);
    return;
  }
  if (!outbound.upload) {
    await outbound.post(target, 'This platform takes no files from me, so I cannot share the full diff here.');
    return;
  }
  const sha = typeof call.args.sha === 'string' ? call.args.sha.slice(0, 12) : '';
  try {
    await outbound.upload(target, { ...file, comment: `Full diff of ${sha}, asked for by ${personKey(by)}.` });
  } catch (error) {
    // The platform refused the file (no permission, too large): say so where the diff was asked for,
    // once; a transient failure would have been retried by the platform client already.
    ctx.log.warn({ err: error, envelopeId }, 'could not share a change’s full diff');
    const why = (error as Error).message.slice(0, 200);
    await outbound.post(target, `I could not share the full diff of ${sha} here: ${why}`);
    return;
  }
  ctx.log.info({ envelopeId, bytes: file.content.length }, 'shared a change’s full diff');
}
