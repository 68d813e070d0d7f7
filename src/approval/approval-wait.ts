import { personKey, type Requester } from '../core/person.ts';
import { startSpan, type Span } from '../telemetry/spans.ts';
import type { EnvelopeRow } from './envelope.ts';

/**
 * The approval wait's span (docs/observability.md): from the card's envelope, stored when the turn
 * parked, to its decision or expiry, in the parked run's trace (whose context the envelope's turn
 * state keeps, src/approval/request.ts). Made when the wait ends, with the envelope's start time.
 */
export function approvalWaitSpan(envelope: EnvelopeRow): Span {
  return startSpan('approval wait', {
    parent: envelope.turn_state,
    startTime: envelope.created_at,
    attributes: {
      'countersign.approval.envelope_id': envelope.id,
      'countersign.approval.kind': envelope.kind,
      'countersign.conversation.id': envelope.conversation_id,
      'gen_ai.conversation.id': envelope.conversation_id,
    },
  });
}

/** Ends the wait: how it ended, who decided (a platform id, never a name), how long the card waited. */
export function endApprovalWait(
  wait: Span,
  envelope: EnvelopeRow,
  outcome: 'approved' | 'denied' | 'mixed' | 'expired',
  decider?: Requester,
): void {
  const endedAt = envelope.decided_at ?? new Date();
  wait.setAttributes({
    'countersign.approval.outcome': outcome,
    'countersign.approval.wait_ms': endedAt.getTime() - envelope.created_at.getTime(),
    ...(decider ? { 'countersign.approval.decider': personKey(decider) } : {}),
    ...(envelope.continuation_work_item
      ? { 'countersign.approval.continuation': envelope.continuation_work_item }
      : {}),
  });
  wait.end(endedAt);
}
