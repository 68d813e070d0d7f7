import { personKey, type Requester } from '../core/person.ts';
import { parseCalls, type CallPolicy, type EnvelopeRow, type PlannedCall } from './envelope.ts';
import type { PolicyGate } from './gate.ts';
import type { CallDecision } from '../core/work-item.ts';

/** A decision recorded on the envelope, with who made it. */
export type RecordedDecision = EnvelopeRow['partial_decisions'][number];

export type Verdict = { ok: true } | { ok: false; reason: string };

/**
 * Whether the clicker may decide anything on the envelope: the requester, someone a call's policy
 * names as its approver, or — to withdraw it — an author of a call's content (`mayDecideCall`).
 * Envelopes stored before the policy list their approvers as `platform:user`. Which calls they may
 * decide is checked per call (`verifyAdded`).
 */
function mayDecide(
  gate: PolicyGate,
  envelope: Pick<EnvelopeRow, 'approvers' | 'requester' | 'calls'>,
  clicker: Requester,
): boolean {
  const calls = parseCalls(envelope);
  if (calls.some((c) => c.policy)) {
    return calls.some(
      (c) =>
        c.policy &&
        (mayDecideCall(gate, c.policy, envelope.requester, clicker, 'approve').ok ||
          mayDecideCall(gate, c.policy, envelope.requester, clicker, 'deny').ok),
    );
  }
  const id = personKey(clicker);
  return id === personKey(envelope.requester) || envelope.approvers.includes(id);
}

/** Who may decide, for a refusal: the approvers the calls name (`slack:U…`, `discord-role:…`). */
function approverHint(envelope: Pick<EnvelopeRow, 'approvers'>): string {
  return envelope.approvers.length ? ` (approvers: ${envelope.approvers.slice(0, 5).join(', ')})` : '';
}

/**
 * Whether a decision can be taken on the envelope now, by this person: it exists, is pending and
 * unexpired by the database's clock, and the clicker is the requester or an approver.
 */
export function verifyOpen(
  gate: PolicyGate,
  envelope: EnvelopeRow | undefined,
  clicker: Requester,
): { ok: true; envelope: EnvelopeRow } | { ok: false; reason: string } {
  if (!envelope) return { ok: false, reason: 'This approval request does not exist (or the button is not ours).' };
  if (envelope.status === 'consumed') return { ok: false, reason: 'This request was already decided.' };
  if (envelope.status === 'superseded')
    return { ok: false, reason: 'This request was superseded by a newer message from its requester; nothing was run.' };
  if (envelope.status === 'expired' || envelope.expired_now) {
    return { ok: false, reason: 'This request has expired; nothing was run. Ask again if it is still needed.' };
  }
  if (!mayDecide(gate, envelope, clicker)) {
    return {
      ok: false,
      reason: `You are not allowed to decide on this request; only the requester or an approver can${approverHint(envelope)}.`,
    };
  }
  return { ok: true, envelope };
}

/** Whether a full submission (the console, a stale card) names every requested call exactly once. */
export function verifyCoverage(calls: PlannedCall[], decisions: CallDecision[]): Verdict {
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
  return { ok: true };
}

/** How a recorded decision reads in a refusal, e.g. "Call 2 was already denied by slack:U1". */
export function alreadyDecided(calls: PlannedCall[], recorded: RecordedDecision): string {
  const index = calls.findIndex((c) => c.id === recorded.toolCallId);
  const what = recorded.answer !== undefined ? 'answered' : recorded.approved ? 'approved' : 'denied';
  return `Call ${index + 1} was already ${what} by ${recorded.by.displayName ?? personKey(recorded.by)}`;
}

/**
 * Whether `clicker` may approve or deny one call asked by `requester`. Approving: the policy must let
 * them decide it as asked by the requester and, for a countersignature, by each co-requester (a
 * change's authors): nobody who put content in signs for it a second time. Denying (withdrawing, a
 * change card's Discard): the requester, an approver, or any co-requester — all of them stand
 * behind the call, and nobody else may. Authors are stored as `platform:user`, without the
 * workspace that issued the id, so they are matched the way the policy matches its short forms.
 */
function mayDecideCall(
  gate: PolicyGate,
  policy: CallPolicy,
  requester: Requester,
  clicker: Requester,
  action: 'approve' | 'deny',
): Verdict {
  const asRequester = gate.mayDecideStored(policy, clicker, requester, action);
  const others = policy.coRequesters ?? [];
  if (action === 'deny')
    return asRequester.ok || others.some((key) => gate.isNamedBy(policy, key, clicker)) ? { ok: true } : asRequester;
  if (!asRequester.ok || policy.outcome !== 'countersign') return asRequester;
  return coRequesters(policy).reduce<Verdict>(
    (so, author) => (so.ok ? gate.mayDecideStored(policy, clicker, author, 'approve') : so),
    asRequester,
  );
}

/** A call's other requesters (`platform:user`) as people the policy can compare. */
function coRequesters(policy: CallPolicy): Requester[] {
  return (policy.coRequesters ?? []).flatMap((key) => {
    const at = key.indexOf(':');
    return at > 0 ? [{ platform: key.slice(0, at), userId: key.slice(at + 1) }] : [];
  });
}

/**
 * Checks the decisions a clicker adds now, against the envelope as read: each names a requested,
 * still undecided call; a question's answer is one of its options; and under the two-person rule the
 * requester approves none of their own high-risk calls. Decisions recorded earlier were checked
 * against whoever made them, so an approver's approval never counts as the requester's.
 */
export function verifyAdded(
  gate: PolicyGate,
  envelope: EnvelopeRow,
  calls: PlannedCall[],
  added: CallDecision[],
  clicker: Requester,
): Verdict {
  const byId = new Map(calls.map((c) => [c.id, c] as const));
  const recorded = new Map(envelope.partial_decisions.map((d) => [d.toolCallId, d] as const));
  const seen = new Set<string>();
  for (const d of added) {
    if (!byId.has(d.toolCallId))
      return { ok: false, reason: `The decision names a call that was not requested (${d.toolCallId}).` };
    if (seen.has(d.toolCallId)) return { ok: false, reason: `The call ${d.toolCallId} was decided twice.` };
    seen.add(d.toolCallId);
    const earlier = recorded.get(d.toolCallId);
    if (earlier)
      return { ok: false, reason: `${alreadyDecided(calls, earlier)}; a recorded decision is never changed.` };
  }
  if (envelope.kind === 'question' && added.length > 0) {
    const options = (calls[0]?.args.options as string[] | undefined) ?? [];
    const answer = added[0]?.answer;
    if (!answer || !options.includes(answer))
      return { ok: false, reason: 'That answer is not one of the options offered.' };
  }
  // The policy's decision on each call says who may approve or deny it.
  for (const d of added) {
    const policy = byId.get(d.toolCallId)?.policy;
    if (!policy) continue;
    const verdict = mayDecideCall(gate, policy, envelope.requester, clicker, d.approved ? 'approve' : 'deny');
    if (!verdict.ok) {
      const index = calls.findIndex((c) => c.id === d.toolCallId);
      return { ok: false, reason: calls.length > 1 ? `Call ${index + 1}: ${verdict.reason}` : verdict.reason };
    }
  }
  const legacy = added.some((d) => !byId.get(d.toolCallId)?.policy);
  if (legacy && envelope.two_person_rule && personKey(clicker) === personKey(envelope.requester)) {
    const ownHighRisk = added.some((d) => d.approved && byId.get(d.toolCallId)?.risk === 'high');
    if (ownHighRisk) {
      return {
        ok: false,
        reason: 'You cannot approve your own high-risk call: another approver has to (two-person rule).',
      };
    }
  }
  return { ok: true };
}
