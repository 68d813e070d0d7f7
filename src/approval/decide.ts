import { randomUUID } from 'node:crypto';
import { Counter } from 'prom-client';
import { registry } from '../metrics.ts';
import { transaction } from '../db/pool.ts';
import { personKey, type Requester } from '../core/person.ts';
import { ButtonPayload, MAX_DENY_REASON, NONCE_PATTERN } from '../core/buttons.ts';
import { makeVisible } from './card.ts';
import { ReplyTarget } from '../core/reply-target.ts';
import { newWorkItem, Priority, type CallDecision, type WorkItem } from '../core/work-item.ts';
import { continueParkedTurn } from '../queue/turn-lifecycle.ts';
import type { ApprovalContext } from './context.ts';
import type { ClickedMessage } from '../core/approval-card.ts';
import { parseCalls, type EnvelopeRow, type PlannedCall } from './envelope.ts';
import { refreshCard } from './show.ts';
import { policyStillAllows, ruleName, type GrantOffer } from './grants.ts';
import { decideCall } from './taint.ts';
import { insertGrant } from './grant-store.ts';
import type { PoolClient } from '../db/pool.ts';
import { traceCarrier } from '../telemetry/spans.ts';
import { approvalWaitSpan, endApprovalWait } from './approval-wait.ts';
import { audit, auditRejection, consumeNonce, findEnvelopeByNonce, recordPartialDecisions } from './store.ts';
import { alreadyDecided, verifyAdded, verifyCoverage, verifyOpen, type RecordedDecision } from './verify.ts';

/**
 * Rejected clicks audited per clicker per minute (database clock); the rest are counted in
 * countersign.approval_audit_budget and the metric below. A person mis-clicking never comes near it.
 */
export const REJECTION_AUDITS_PER_MINUTE = 20;

/** Tries of one decision against concurrent clicks; each lost try is another click's progress. */
const MAX_DECISION_ATTEMPTS = 100;

const unauditedRejections = new Counter({
  name: 'countersign_approval_rejections_unaudited_total',
  help: 'Rejected approval clicks past their clicker’s per-minute audit budget: refused, counted, not written to the audit log.',
  registers: [registry],
});

export type SubmitResult =
  | { ok: true; continuation: WorkItem; envelope: EnvelopeRow }
  | { ok: true; partial: true; envelope: EnvelopeRow }
  | { ok: false; reason: string };

/** What a click adds to the envelope as read, or why it adds nothing. */
type Choose = (
  envelope: EnvelopeRow,
  calls: PlannedCall[],
) => CallDecision[] | { reason: string } | Promise<CallDecision[] | { reason: string }>;

/**
 * A button click: `value` is the button's payload (nonce + decision). Anything invalid is rejected
 * before the nonce is consumed, with a reason meant only for the clicker.
 */
export async function decideClick(
  ctx: ApprovalContext,
  value: string,
  clicker: Requester,
  clicked?: ClickedMessage,
): Promise<SubmitResult> {
  const payload = ButtonPayload.safeParse(value);
  if (!payload.success) {
    return reject(ctx, undefined, undefined, clicker, 'That button is not a valid approval button.', {
      auditReason: 'malformed button payload',
      detail: { length: value.length },
    });
  }
  const { nonce, decision } = payload.data;
  return decide(ctx, nonce, clicker, { decision }, clicked, async (envelope, calls) => {
    const recorded = new Map(envelope.partial_decisions.map((d) => [d.toolCallId, d] as const));
    if (decision === 'C') return continueWithoutConnecting(ctx, envelope, calls, clicker);
    if (decision === 'A' || decision === 'D') {
      // Approve all / Deny all decide the calls nobody has decided yet; recorded decisions stand.
      return calls.filter((c) => !recorded.has(c.id)).map((c) => ({ toolCallId: c.id, approved: decision === 'A' }));
    }
    // A Stop button's payload shares the format but is no decision (adapters route it to stopTurn);
    // Deny-with-reason and Full-arguments buttons open a form or a view, which adapters handle.
    if (decision === 'S' || decision === 'R' || decision.startsWith('f'))
      return { reason: 'That button is not an approval decision.' };
    const index = Number(decision.slice(1));
    if (decision.startsWith('o')) {
      const question = calls[0];
      const answer = ((question?.args.options as string[] | undefined) ?? [])[index];
      if (envelope.kind !== 'question' || !question || answer === undefined) {
        return { reason: 'That answer is not one of the options offered.' };
      }
      return [{ toolCallId: question.id, approved: true, answer }];
    }
    const call = calls[index];
    if (!call) return { reason: 'That button names a call that was not requested.' };
    if (decision.startsWith('g')) {
      const offer = await grantable(ctx, envelope, call);
      if (typeof offer === 'string') return { reason: offer };
      const earlier = recorded.get(call.id);
      if (earlier) return { reason: `${alreadyDecided(calls, earlier)}; a recorded decision is never changed.` };
      return [{ toolCallId: call.id, approved: true, grantId: randomUUID() }];
    }
    const approved = decision.startsWith('a');
    const earlier = recorded.get(call.id);
    if (earlier) {
      return earlier.approved === approved
        ? { reason: `${alreadyDecided(calls, earlier)}; nothing more to do for it.` }
        : { reason: `${alreadyDecided(calls, earlier)}; a recorded decision is never changed.` };
    }
    return [{ toolCallId: call.id, approved }];
  });
}

/**
 * "Continue without it": the requester — only they, since the account is theirs — declines to
 * connect; every undecided call that still waits for one of their connections is not run, and the
 * model is told the tool is unavailable. Calls waiting for something else still wait for a click.
 */
async function continueWithoutConnecting(
  ctx: ApprovalContext,
  envelope: EnvelopeRow,
  calls: PlannedCall[],
  clicker: Requester,
): Promise<CallDecision[] | { reason: string }> {
  if (personKey(clicker) !== personKey(envelope.requester))
    return { reason: 'Only the person who asked can choose to go on without their own connection.' };
  const recorded = new Set(envelope.partial_decisions.map((d) => d.toolCallId));
  const decided: CallDecision[] = [];
  for (const call of calls.filter((c) => !recorded.has(c.id))) {
    const server = await ctx.connections?.missing(envelope.requester, call);
    if (server)
      decided.push({
        toolCallId: call.id,
        approved: false,
        reason: `not run: the requester chose to continue without connecting their own ${server} account, so ${call.name} is unavailable`,
      });
  }
  return decided.length ? decided : { reason: 'Nothing here waits for a connection any more.' };
}

/**
 * Whether "Always allow here" may be clicked for this call now: the card offered it, and the policy
 * in force still lets the call become a grant (it may have changed since the card was shown).
 */
async function grantable(ctx: ApprovalContext, envelope: EnvelopeRow, call: PlannedCall): Promise<GrantOffer | string> {
  const offer = call.policy?.grant;
  if (!offer) return 'This call cannot be always allowed: the policy does not offer a grant for it.';
  const decision = await decideCall(
    ctx,
    ctx.pool,
    call,
    envelope.requester,
    ReplyTarget.parse(envelope.reply),
    envelope.conversation_id,
  );
  if (!policyStillAllows({ args: offer.args, rule: ruleName(call.policy!.rule) }, decision))
    return 'The policy no longer lets this call be always allowed; approve it once instead.';
  return offer;
}

/**
 * Deny with a reason (a form's submission): every call nobody decided yet is denied, and the reason
 * — who denied it and why — reaches the model as the calls' result, the audit log and the card.
 * Verified like a click: a form submitted after the card was decided changes nothing.
 */
export async function decideDenyWithReason(
  ctx: ApprovalContext,
  nonce: string,
  reason: string,
  clicker: Requester,
): Promise<SubmitResult> {
  const text = makeVisible(reason.trim().replace(/\s+/g, ' ')).slice(0, MAX_DENY_REASON);
  if (!NONCE_PATTERN.test(nonce)) {
    return reject(ctx, undefined, undefined, clicker, 'That form is not a valid approval form.', {
      auditReason: 'malformed deny form',
    });
  }
  const by = clicker.displayName ?? personKey(clicker);
  return decide(ctx, nonce, clicker, { decision: 'R', reason: text }, undefined, (envelope, calls) => {
    const recorded = new Set(envelope.partial_decisions.map((d) => d.toolCallId));
    const open = calls.filter((c) => !recorded.has(c.id));
    if (envelope.kind === 'question') return { reason: 'A question is answered, not denied.' };
    return open.map((c) => ({
      toolCallId: c.id,
      approved: false,
      reason: text ? `denied by ${by}: ${text}` : `denied by ${by}`,
    }));
  });
}

/**
 * The verify-and-consume path of UIs that send every decision at once (the console): a full set of
 * decisions for an envelope's calls. Calls someone already decided must be given the same decision.
 */
export async function decideAll(
  ctx: ApprovalContext,
  nonce: string,
  decisions: CallDecision[],
  clicker: Requester,
): Promise<SubmitResult> {
  return decide(ctx, nonce, clicker, { decisions }, undefined, (envelope, calls) => {
    const coverage = verifyCoverage(calls, decisions);
    if (!coverage.ok) return coverage;
    const recorded = new Map(envelope.partial_decisions.map((d) => [d.toolCallId, d] as const));
    const added: CallDecision[] = [];
    for (const d of decisions) {
      const earlier = recorded.get(d.toolCallId);
      // A grant is only ever made by its own button ("Always allow here"), never by a submitted list.
      if (!earlier) added.push({ ...d, grantId: undefined });
      else if (earlier.approved !== d.approved || earlier.answer !== d.answer) {
        return { reason: `${alreadyDecided(calls, earlier)}; a recorded decision is never changed.` };
      }
    }
    return added;
  });
}

/**
 * Adds the decisions `choose` makes from the envelope as read, then records them with a
 * compare-and-set on the decisions read: partially, or — when every call is decided — by consuming
 * the nonce and enqueueing the continuation in one transaction. Losing the race to another click
 * means re-reading and choosing again, never overwriting what that click recorded. Each lost race
 * is someone else's progress (a decision added, or the envelope closed), so this ends.
 */
async function decide(
  ctx: ApprovalContext,
  nonce: string,
  clicker: Requester,
  detail: unknown,
  clicked: ClickedMessage | undefined,
  choose: Choose,
): Promise<SubmitResult> {
  for (let attempt = 0; attempt < MAX_DECISION_ATTEMPTS; attempt++) {
    const read = await findEnvelopeByNonce(ctx.pool, nonce);
    const open = verifyOpen(ctx.gate, read, clicker);
    if (!open.ok) return reject(ctx, read, nonce, clicker, open.reason, { detail });
    const { envelope } = open;
    const calls = parseCalls(envelope);
    const chosen = await choose(envelope, calls);
    if (!Array.isArray(chosen)) return reject(ctx, envelope, nonce, clicker, chosen.reason, { detail });
    const verdict = verifyAdded(ctx.gate, envelope, calls, chosen, clicker);
    if (!verdict.ok) return reject(ctx, envelope, nonce, clicker, verdict.reason, { detail });
    const decided = [...envelope.partial_decisions, ...chosen.map((d) => ({ ...d, by: clicker }))];
    const outcome =
      decided.length === calls.length
        ? await consume(ctx, envelope, calls, decided, chosen, clicker, detail, clicked)
        : await recordPartial(ctx, envelope, chosen, decided, clicker, detail, clicked);
    if (outcome) return outcome;
    ctx.log.debug({ envelopeId: envelope.id, attempt }, 'approval decision lost a race; re-reading');
  }
  return reject(ctx, undefined, nonce, clicker, 'Too many people are deciding on this request at once; try again.', {
    detail,
  });
}

/** Records some calls' decisions; `undefined` when another click changed the envelope first. */
async function recordPartial(
  ctx: ApprovalContext,
  envelope: EnvelopeRow,
  chosen: CallDecision[],
  decided: RecordedDecision[],
  clicker: Requester,
  detail: unknown,
  clicked: ClickedMessage | undefined,
): Promise<SubmitResult | undefined> {
  const updated = await transaction(ctx.pool, async (client) => {
    const row = await recordPartialDecisions(client, envelope.nonce, envelope.partial_decisions_read, decided);
    if (!row) return undefined;
    await createGrants(client, envelope, chosen, clicker);
    await audit(client, { envelopeId: envelope.id, nonce: envelope.nonce, event: 'click', actor: clicker, detail });
    for (const d of chosen) {
      await audit(client, {
        envelopeId: envelope.id,
        nonce: envelope.nonce,
        event: 'partial',
        actor: clicker,
        detail: { call: d.toolCallId, approved: d.approved },
      });
    }
    return row;
  });
  if (!updated) return undefined;
  await refreshCard(ctx, updated, 'pending', clicked);
  return { ok: true, partial: true, envelope: updated };
}

/**
 * Consumes the nonce and continues the parked turn in one transaction; `undefined` when another
 * click changed the envelope first.
 */
async function consume(
  ctx: ApprovalContext,
  envelope: EnvelopeRow,
  calls: PlannedCall[],
  decided: RecordedDecision[],
  chosen: CallDecision[],
  clicker: Requester,
  detail: unknown,
  clicked: ClickedMessage | undefined,
): Promise<SubmitResult | undefined> {
  // In the order of the calls, as the continuation and the card read them.
  const byId = new Map(decided.map((d) => [d.toolCallId, d] as const));
  const inOrder = calls.map((c) => byId.get(c.id)!);
  const decisions: CallDecision[] = inOrder.map(({ toolCallId, approved, answer, reason, grantId }) => ({
    toolCallId,
    approved,
    ...(answer !== undefined ? { answer } : {}),
    ...(reason !== undefined ? { reason } : {}),
    ...(grantId !== undefined ? { grantId } : {}),
  }));
  const reply = ReplyTarget.parse(envelope.reply);
  // Landing a change is a MERGE (HIGH); every other continuation resumes a turn a person waits on.
  const merges = calls.some((c) => ctx.tools.get(c.name)?.kind === 'merge');
  const wait = approvalWaitSpan(envelope);
  const continuation = newWorkItem({
    type: merges ? 'MERGE' : 'CHAT',
    priority: merges ? Priority.HIGH : Priority.CRITICAL,
    conversationId: envelope.conversation_id,
    requester: envelope.requester,
    input: {
      approval: {
        envelopeId: envelope.id,
        decisions,
        decidedBy: clicker,
        approvers: inOrder.filter((d) => d.approved).map((d) => ({ toolCallId: d.toolCallId, by: d.by })),
      },
      approvalContextId: envelope.context_id,
    },
    // The continuation runs as the wait's child, on whichever worker, however much later.
    payload: { ...traceCarrier(wait) },
    reply: { ...reply, messageId: undefined },
  });
  const consumed = await transaction(ctx.pool, async (client) => {
    const row = await consumeNonce(
      client,
      envelope.nonce,
      envelope.partial_decisions_read,
      inOrder,
      decisions,
      clicker,
      continuation.id,
    );
    if (!row) return undefined;
    await createGrants(client, envelope, chosen, clicker);
    await audit(client, { envelopeId: envelope.id, nonce: envelope.nonce, event: 'click', actor: clicker, detail });
    // The parked turn waits for nobody any more; its continuation carries on.
    await continueParkedTurn(client, envelope.work_item_id, continuation);
    await audit(client, {
      envelopeId: envelope.id,
      nonce: envelope.nonce,
      event: 'consumed',
      actor: clicker,
      detail: { decisions, continuation: continuation.id },
    });
    return row;
  });
  // A lost race ends no span: it is never exported, and the click that wins records the wait.
  if (!consumed) return undefined;
  const approved = decisions.filter((d) => d.approved).length;
  endApprovalWait(wait, consumed, approved === decisions.length ? 'approved' : approved ? 'mixed' : 'denied', clicker);
  await refreshCard(ctx, consumed, 'decided', clicked);
  return { ok: true, continuation, envelope: consumed };
}

/**
 * Stores the grants the decisions just recorded carry ("Always allow here"), in the transaction that
 * records them: a grant exists exactly when its approval does. What is stored is the offer the card
 * showed, so a click never grants more than the card said.
 */
async function createGrants(
  client: PoolClient,
  envelope: EnvelopeRow,
  chosen: CallDecision[],
  clicker: Requester,
): Promise<void> {
  const calls = new Map(parseCalls(envelope).map((c) => [c.id, c] as const));
  for (const d of chosen) {
    const call = calls.get(d.toolCallId);
    const offer = call?.policy?.grant;
    if (!d.grantId || !call || !offer) continue;
    const rule = ruleName(call.policy!.rule);
    const grant = await insertGrant(client, d.grantId, offer, clicker, rule, envelope.id);
    await audit(client, {
      envelopeId: envelope.id,
      nonce: envelope.nonce,
      event: 'granted',
      actor: clicker,
      detail: { grant: grant.id, tool: grant.tool, args: grant.args, place: grant.place, expiresAt: grant.expiresAt },
    });
  }
}

/**
 * Refuses a click. Its audit row counts against the clicker's per-minute budget, so a flood of
 * forged clicks cannot grow the audit log without bound; past the budget it is only counted.
 */
async function reject(
  ctx: ApprovalContext,
  envelope: EnvelopeRow | undefined,
  nonce: string | undefined,
  clicker: Requester,
  reason: string,
  options: { auditReason?: string; detail?: unknown } = {},
): Promise<SubmitResult> {
  const written = await auditRejection(
    ctx.pool,
    {
      envelopeId: envelope?.id,
      nonce,
      actor: clicker,
      actorKey: personKey(clicker),
      reason: options.auditReason ?? reason,
      detail: options.detail,
    },
    ctx.settings.rejectionAuditsPerMinute ?? REJECTION_AUDITS_PER_MINUTE,
  );
  if (!written) unauditedRejections.inc();
  return { ok: false, reason };
}
