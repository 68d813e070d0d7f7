import type { Logger } from 'pino';
import type { ToolCall } from '../agent/messages.ts';
import { TurnState } from '../agent/turn-state.ts';
import type { CallDecision, WorkItem } from '../core/work-item.ts';
import { canonicalJson } from './canonical-json.ts';
import type { ApprovalContext } from './context.ts';
import { parseCalls, planHash, scopeHash, type ApprovalScope } from './envelope.ts';
import { planCalls } from './request.ts';
import { refreshCard } from './show.ts';
import { audit, findEnvelopeById } from './store.ts';

/**
 * For a continuation: re-checks the consumed envelope (plan hash, scope) and returns the parked
 * turn with the decisions applied, or why it must not run.
 */
export async function resumeApproved(
  ctx: ApprovalContext,
  item: WorkItem,
  log: Logger,
): Promise<{ state: TurnState } | { refused: string }> {
  const approval = item.input.approval;
  const envelope = approval ? await findEnvelopeById(ctx.pool, approval.envelopeId) : undefined;
  const refuse = async (reason: string, detail?: unknown) => {
    log.warn({ envelopeId: envelope?.id, reason }, 'approval continuation refused');
    await audit(ctx.pool, { envelopeId: envelope?.id, nonce: envelope?.nonce, event: 'refused', reason, detail });
    if (envelope) await refreshCard(ctx, envelope, 'refused');
    return {
      refused: `I did not run the approved action: ${reason} Nothing was run; ask again if it is still needed.`,
    };
  };
  if (
    !envelope ||
    envelope.status !== 'consumed' ||
    envelope.continuation_work_item !== item.id ||
    !envelope.decisions
  ) {
    return refuse('the approval does not match this continuation.');
  }
  if (planHash(envelope.calls) !== envelope.plan_hash) {
    return refuse('the requested calls changed after they were shown for approval (plan hash mismatch).');
  }
  const parsedState = TurnState.safeParse(envelope.turn_state);
  if (!parsedState.success) return refuse('the parked turn could not be read.');
  const state = parsedState.data;
  // The stored calls must also be the parked turn's: the hash alone only proves the row is intact.
  const planned = planCalls(ctx, state.pendingApproval);
  if (
    canonicalJson(planned.map(({ id, name, args }) => ({ id, name, args }))) !==
    canonicalJson(parseCalls(envelope).map(({ id, name, args }) => ({ id, name, args })))
  ) {
    return refuse('the requested calls changed after they were shown for approval (plan hash mismatch).');
  }
  const current = ctx.scope();
  if (scopeHash(current) !== envelope.scope_hash) {
    const changed = (Object.keys(current) as Array<keyof ApprovalScope>).filter(
      (k) => canonicalJson(current[k]) !== canonicalJson(envelope.scope[k]),
    );
    return refuse(`what the calls would run against changed since the request (${changed.join(', ')}).`, { changed });
  }
  // The continuation streams into a new reply below the card.
  return {
    state: {
      ...state,
      text: '',
      reply: { messageIds: [], sealed: [], carry: '' },
      approvalDecisions: envelope.decisions,
    },
  };
}

/** Records what happened to each decided call (after the continuation ran it). */
export async function recordOutcome(
  ctx: ApprovalContext,
  envelopeId: string,
  call: ToolCall,
  decision: CallDecision,
  isError: boolean,
): Promise<void> {
  const event = decision.answer !== undefined ? 'answered' : decision.approved ? 'executed' : 'denied';
  await audit(ctx.pool, { envelopeId, event, detail: { call: call.id, tool: call.name, isError } });
}
