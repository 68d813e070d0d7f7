import type { Requester } from '../agent/tools/tool.ts';
import type { CallDecision, EnvelopeRow, PlannedCall } from './envelope.ts';

export type Verdict = { ok: true } | { ok: false; reason: string };

export function qualifiedId(person: Requester): string {
  return `${person.platform}:${person.userId}`;
}

/** The requester and everyone in APPROVERS may decide; nobody else. */
export function mayDecide(envelope: Pick<EnvelopeRow, 'approvers' | 'requester'>, clicker: Requester): boolean {
  const id = qualifiedId(clicker);
  return id === qualifiedId(envelope.requester) || envelope.approvers.includes(id);
}

/**
 * Checks a submission against its envelope before anything is consumed: the envelope is pending and
 * unexpired, the clicker may decide, and the decisions cover the requested calls one to one.
 */
export function verifySubmission(
  envelope: EnvelopeRow | undefined,
  calls: PlannedCall[],
  decisions: CallDecision[],
  clicker: Requester,
): Verdict {
  if (!envelope) return { ok: false, reason: 'This approval request does not exist (or the button is not ours).' };
  if (envelope.status === 'consumed') return { ok: false, reason: 'This request was already decided.' };
  if (envelope.status === 'expired' || envelope.expired_now) {
    return { ok: false, reason: 'This request has expired; nothing was run. Ask again if it is still needed.' };
  }
  if (!mayDecide(envelope, clicker)) {
    return {
      ok: false,
      reason: 'You are not allowed to decide on this request; only the requester or an approver can.',
    };
  }
  const requested = new Set(calls.map((c) => c.id));
  const seen = new Set<string>();
  for (const d of decisions) {
    if (!requested.has(d.toolCallId))
      return { ok: false, reason: `The decision names a call that was not requested (${d.toolCallId}).` };
    if (seen.has(d.toolCallId)) return { ok: false, reason: `The call ${d.toolCallId} was decided twice.` };
    seen.add(d.toolCallId);
  }
  if (seen.size !== requested.size) {
    return { ok: false, reason: `Every requested call needs a decision (${requested.size - seen.size} missing).` };
  }
  if (envelope.kind === 'question') {
    const options = (calls[0]?.args.options as string[] | undefined) ?? [];
    const answer = decisions[0]?.answer;
    if (!answer || !options.includes(answer))
      return { ok: false, reason: 'That answer is not one of the options offered.' };
  }
  if (envelope.two_person_rule && qualifiedId(clicker) === qualifiedId(envelope.requester)) {
    const ownHighRisk = decisions.some((d) => d.approved && calls.find((c) => c.id === d.toolCallId)?.risk === 'high');
    if (ownHighRisk) {
      return {
        ok: false,
        reason: 'You cannot approve your own high-risk call: another approver has to (two-person rule).',
      };
    }
  }
  return { ok: true };
}
