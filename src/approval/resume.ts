import type { Logger } from 'pino';
import type { ToolCall } from '../agent/messages.ts';
import { TurnState } from '../agent/turn-state.ts';
import type { CallDecision, ContentPin, WorkItem } from '../core/work-item.ts';
import type { Requester } from '../core/person.ts';
import type { Decision } from '../policy/index.ts';
import { canonicalJson } from './canonical-json.ts';
import type { ApprovalContext } from './context.ts';
import { parseCalls, planHash, scopeHash, type ApprovalScope, type EnvelopeRow } from './envelope.ts';
import { ReplyTarget } from '../core/reply-target.ts';
import { planCalls } from './request.ts';
import { refreshCard } from './show.ts';
import { mayBeSamePerson } from '../core/person.ts';
import { changesFiles, judgeAndDecide, runsProgram, unvouchedChanges, vouchAfterApprovedCall } from './taint.ts';
import { audit, findEnvelopeById, recordPolicyRefusals } from './store.ts';

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
  const current = ctx.scope(
    parseCalls(envelope).map((c) => c.name),
    envelope.conversation_id,
  );
  if (scopeHash(current) !== envelope.scope_hash) {
    const changed = (Object.keys(current) as Array<keyof ApprovalScope>).filter(
      (k) => canonicalJson(current[k]) !== canonicalJson(envelope.scope[k]),
    );
    return refuse(`what the calls would run against changed since the request (${changed.join(', ')}).`, { changed });
  }
  const decisions = await recheckPolicy(ctx, envelope, log);
  // The continuation streams into a new reply below the card.
  return {
    state: {
      ...state,
      text: '',
      reply: { messageIds: [], sealed: [], carry: '' },
      approvalDecisions: decisions,
    },
  };
}

/**
 * The policy as it is now has the last word: an approved call it now refuses, or that now needs a
 * signature its approver cannot give (a countersignature the requester gave themselves), is not run.
 * Such a call becomes a denial with the reason, audited; the rest stand as decided.
 */
async function recheckPolicy(ctx: ApprovalContext, envelope: EnvelopeRow, log: Logger): Promise<CallDecision[]> {
  const calls = parseCalls(envelope);
  const reply = ReplyTarget.safeParse(envelope.reply);
  if (!reply.success) return envelope.decisions ?? [];
  const deciders = new Map(envelope.partial_decisions.map((d) => [d.toolCallId, d.by] as const));
  const out: CallDecision[] = [];
  let refusals = 0;
  // Every call is decided here, before any of them runs: a program is decided on the workspace
  // without what an earlier call of the same card will write. Where the requester alone approved
  // both, the program would run over content only they vouched for (the taint, docs/policy.md).
  const position = new Map(calls.map((c, i) => [c.id, i] as const));
  const oneVoiceWrites: number[] = [];
  const oneVoicePrograms: Array<{ at: number; call: ToolCall; ruleName: string }> = [];
  for (const decision of envelope.decisions ?? []) {
    const call = calls.find((c) => c.id === decision.toolCallId);
    if (!call || !decision.approved || decision.answer !== undefined) {
      out.push(decision);
      continue;
    }
    const { decision: now, judged } = await judgeAndDecide(
      ctx,
      ctx.pool,
      call,
      envelope.requester,
      reply.data,
      envelope.conversation_id,
    );
    const by = deciders.get(call.id) ?? envelope.decided_by ?? envelope.requester;
    // A countersignature covers the changed files its card named; a change since is unseen content.
    // An approval of shown bytes covers those bytes: a file changed since is not what was approved.
    const reason =
      changedContent(call.policy?.content, judged.content) ??
      unvouchedChanges(call.policy, now) ??
      policyRefusal(ctx, now, by, envelope.requester);
    if (!reason) {
      const at = position.get(call.id) ?? 0;
      if (ctx.gate.hasApprovers() && mayBeSamePerson(by, envelope.requester)) {
        if (runsProgram(judged)) oneVoicePrograms.push({ at, call, ruleName: now.rule.name });
        if (changesFiles(judged)) oneVoiceWrites.push(at);
      }
      out.push(call.policy?.content ? { ...decision, content: call.policy.content } : decision);
      continue;
    }
    log.warn(
      { envelopeId: envelope.id, call: call.id, rule: now.rule.name },
      'an approved call is refused by the policy now',
    );
    await audit(ctx.pool, {
      envelopeId: envelope.id,
      nonce: envelope.nonce,
      event: 'policy_denied',
      reason,
      detail: { call: call.id, tool: call.name, rule: `${now.rule.name}, ${now.rule.source}` },
    });
    out.push({ toolCallId: call.id, approved: false, reason });
    refusals += 1;
  }
  for (const { at, call, ruleName } of oneVoicePrograms) {
    const earlier = oneVoiceWrites.filter((w) => w < at).map((w) => calls[w]?.name ?? 'a call');
    if (earlier.length === 0) continue;
    const reason = `it would run after ${earlier.join(', ')} of the same request, and what that writes only its requester vouched for: a program that could read it needs a second person's countersignature. Ask again now that it has run.`;
    await audit(ctx.pool, {
      envelopeId: envelope.id,
      nonce: envelope.nonce,
      event: 'policy_denied',
      reason,
      detail: { call: call.id, tool: call.name, rule: `${ruleName}, default:tainted-workspace` },
    });
    const i = out.findIndex((d) => d.toolCallId === call.id);
    out[i] = { toolCallId: call.id, approved: false, reason };
    refusals += 1;
  }
  if (refusals > 0) {
    await recordPolicyRefusals(ctx.pool, envelope.id, out);
    await refreshCard(ctx, { ...envelope, decisions: out }, 'decided');
  }
  return out;
}

/** Why an approval of the bytes a card showed does not cover the content there now, or undefined. */
function changedContent(shown: ContentPin | undefined, now: ContentPin | undefined): string | undefined {
  if (!shown || (now && now.sha256 === shown.sha256 && now.size === shown.size)) return undefined;
  const was = `${shown.size} bytes, sha256 ${shown.sha256.slice(0, 12)}`;
  const is = now ? `now ${now.size} bytes, sha256 ${now.sha256.slice(0, 12)}` : 'now missing or unreadable';
  return `the file changed after the card was shown (the card showed ${was}; it is ${is}), so the approval does not cover what would be shared.`;
}

/** Why the policy in force refuses a call someone approved earlier, or undefined. */
function policyRefusal(ctx: ApprovalContext, now: Decision, by: Requester, requester: Requester): string | undefined {
  if (now.outcome === 'deny')
    return `the policy changed after it was approved and now refuses it (${now.rule.name}, ${now.rule.source})${now.message ? `: ${now.message}` : ''}.`;
  if (now.outcome === 'allow') return undefined;
  const verdict = ctx.gate.mayDecideStored(
    { outcome: now.outcome, rule: now.rule, approvers: now.approvers, home: now.home },
    by,
    requester,
    'approve',
  );
  return verdict.ok ? undefined : `the policy changed after it was approved: ${verdict.reason}`;
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
  // What a call a second person approved left is vouched for (taint.ts); a failed call too: it may
  // have written part of what it was approved to write, all of it seen on the card.
  if (event !== 'executed' || !ctx.gate.hasApprovers()) return;
  const envelope = await findEnvelopeById(ctx.pool, envelopeId);
  const decider = envelope?.partial_decisions.find((d) => d.toolCallId === call.id)?.by ?? envelope?.decided_by;
  if (envelope && decider) await vouchAfterApprovedCall(ctx, envelope, call, decider);
}
