import type { Logger } from 'pino';
import type { PoolClient } from '../db/pool.ts';
import type { ToolCall } from '../agent/messages.ts';
import type { TurnState } from '../agent/turn-state.ts';
import type { Requester } from '../core/person.ts';
import type { ClickedMessage } from '../core/approval-card.ts';
import type { CallDecision, ConversationMode, WorkItem } from '../core/work-item.ts';
import type { ApprovalContext } from './context.ts';
import type { CallRuling, GrantUse } from '../agent/call-ruling.ts';
import type { Grant } from './grants.ts';
import { grantsSeenFrom, revokeFromChat, useGrant, type RevokeResult } from './grant-verbs.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import type { Admission, Budget } from '../policy/index.ts';
import { audit, findEnvelopeByNonce, findSupersededBy } from './store.ts';
import { parseCalls } from './envelope.ts';
import { fullArgs, makeVisible } from './card.ts';
import { NONCE_PATTERN } from '../core/buttons.ts';
import { decideAll, decideClick, decideDenyWithReason, type SubmitResult } from './decide.ts';
import { expireStale } from './expire.ts';
import { requestApproval } from './request.ts';
import { decideCall } from './taint.ts';
import { recordOutcome, resumeApproved } from './resume.ts';
import { refreshCard, showPendingCard } from './show.ts';
import { requestFullDiff, shareChangeDiff } from './change-diff.ts';
import { continueAfterConnect } from './connections.ts';

export { REJECTION_AUDITS_PER_MINUTE, type SubmitResult } from './decide.ts';
export type { Grant } from './grants.ts';
export { describeGrant, NO_GRANTS, type RevokeResult } from './grant-verbs.ts';

/**
 * Approvals, platform-neutral: parks a turn behind a single-use envelope, verifies and consumes
 * clicks, and hands a consumed decision to its continuation. Adapters only render cards and pass
 * clicks in; nothing here knows Slack or Discord.
 *
 * One object for the wiring (app.ts, adapters, the job task) to hold; each verb lives in the module
 * named for it — request, show, decide, resume, expire — and gets the same context.
 */
export class ApprovalService {
  readonly #ctx: ApprovalContext;

  constructor(options: ApprovalContext) {
    this.#ctx = { ...options };
  }

  /** Stores the envelope inside the caller's transaction (the one that parks the turn): see request.ts. */
  park(client: PoolClient, item: WorkItem, state: TurnState): Promise<void> {
    return requestApproval(this.#ctx, client, item, state);
  }

  /** Posts the card of a pending envelope that has none yet (the show-card job): see show.ts. */
  showPendingCard(envelopeId: string, parkedTextFirst?: (workItemId: string) => Promise<void>): Promise<void> {
    return showPendingCard(this.#ctx, envelopeId, parkedTextFirst);
  }

  /** A button click (nonce + decision), verified before anything is consumed: see decide.ts. */
  click(value: string, clicker: Requester, clicked?: ClickedMessage): Promise<SubmitResult> {
    return decideClick(this.#ctx, value, clicker, clicked);
  }

  /**
   * The whole arguments of call `index` of a card, for its "Full arguments" button: anyone who can
   * see the card may read them (the card shows them, cut); nothing is decided.
   */
  async fullArguments(nonce: string, index: number): Promise<{ tool: string; text: string } | undefined> {
    const envelope = NONCE_PATTERN.test(nonce) ? await findEnvelopeByNonce(this.#ctx.pool, nonce) : undefined;
    const call = envelope ? parseCalls(envelope)[index] : undefined;
    return call && { tool: makeVisible(call.name), text: fullArgs(call.args) };
  }

  /** After a person connected `server`: their cards waiting only for it go on (connections.ts). */
  continueAfterConnect(person: Requester, server: string): Promise<number> {
    return continueAfterConnect(this.#ctx, person, server);
  }

  /** A change card's Full diff click: checked here, shared by a job (change-diff.ts). */
  shareFullDiff(nonce: string, by: Requester): Promise<{ ok: true; text: string } | { ok: false; reason: string }> {
    return requestFullDiff(this.#ctx, nonce, by);
  }

  /** The Full diff job: the diff uploaded into the card's thread (change-diff.ts). */
  shareChangeDiff(envelopeId: string, by: Requester): Promise<void> {
    return shareChangeDiff(this.#ctx, envelopeId, by);
  }

  /** A Deny-with-reason form: denies the undecided calls, the reason going to the model: see decide.ts. */
  denyWithReason(nonce: string, reason: string, clicker: Requester): Promise<SubmitResult> {
    return decideDenyWithReason(this.#ctx, nonce, reason, clicker);
  }

  /** Every decision at once (the console); recorded decisions must be repeated unchanged: see decide.ts. */
  submit(nonce: string, decisions: CallDecision[], clicker: Requester): Promise<SubmitResult> {
    return decideAll(this.#ctx, nonce, decisions, clicker);
  }

  /** The continuation's re-check of plan and scope: see resume.ts. */
  resume(item: WorkItem, log: Logger): Promise<{ state: TurnState } | { refused: string }> {
    return resumeApproved(this.#ctx, item, log);
  }

  /** Records what happened to each decided call (after the continuation ran it). */
  recordOutcome(envelopeId: string, call: ToolCall, decision: CallDecision, isError: boolean): Promise<void> {
    return recordOutcome(this.#ctx, envelopeId, call, decision, isError);
  }

  /** The policy's outcome for one call of a turn (the loop asks before it runs or parks a call). */
  async rule(item: WorkItem, call: ToolCall): Promise<CallRuling> {
    const decision = await decideCall(this.#ctx, this.#ctx.pool, call, item.requester, item.reply, item.conversationId);
    // A call that would run as the requester's own account they have not connected waits on a card:
    // they get a private Connect link, and connecting lets the turn go on (connections.ts).
    const missing =
      decision.outcome === 'deny' ? undefined : await this.#ctx.connections?.missing(item.requester, call);
    if (missing) return { outcome: 'ask', rule: `connection ${missing}, built-in` };
    return {
      outcome: decision.outcome,
      rule: `${decision.rule.name}, ${decision.rule.source}`,
      ...(decision.message !== undefined ? { message: decision.message } : {}),
    };
  }

  /**
   * Audits a call a rule let run, or refused, without a card. What an allowed call writes is
   * one-person content by being on disk (taint.ts): nothing to record.
   */
  async recordRuling(item: WorkItem, call: ToolCall, ruling: CallRuling): Promise<void> {
    await audit(this.#ctx.pool, {
      event: ruling.outcome === 'deny' ? 'policy_denied' : 'allowed',
      actor: item.requester,
      ...(ruling.message ? { reason: ruling.message } : {}),
      detail: { workItemId: item.id, call: call.id, tool: call.name, rule: ruling.rule },
    });
  }

  /** A standing grant covering a call that would otherwise wait for a person, claimed for it: see grant-verbs.ts. */
  useGrant(item: WorkItem, call: ToolCall): Promise<GrantUse | undefined> {
    return useGrant(this.#ctx, item, call);
  }

  /** The grants `/countersign grants` lists for this person where they ran it. */
  grantsSeenFrom(person: Requester, reply: ReplyTarget): Promise<Grant[]> {
    return grantsSeenFrom(this.#ctx, person, reply);
  }

  /** A Revoke button: its creator or an approver may revoke a grant. */
  revokeGrant(grantId: string, by: Requester): Promise<RevokeResult> {
    return revokeFromChat(this.#ctx, grantId, by);
  }

  /** What a message does here while its conversation is busy (adapters stamp it on the work item). */
  conversationMode(reply: ReplyTarget): ConversationMode {
    return this.#ctx.gate.conversationMode(reply);
  }

  /** Shows the cards a newer message superseded (the trigger of migration 012 closed them). */
  async showSuperseded(byWorkItemId: string): Promise<void> {
    for (const envelope of await findSupersededBy(this.#ctx.pool, byWorkItemId)) {
      await refreshCard(this.#ctx, envelope, 'superseded');
    }
  }

  /** Whether this person may use the bot where they wrote (adapters ask before they enqueue). */
  mayUse(requester: Requester, reply: ReplyTarget): Admission {
    return this.#ctx.gate.mayUse(requester, reply);
  }

  /** Whether this person is one of the policy's approvers where `reply` is. */
  isApprover(person: Requester, reply: ReplyTarget): boolean {
    return this.#ctx.gate.isApprover(person, reply);
  }

  /** Every budget of the policy in force (the operator's view). */
  budgets(): Budget[] {
    return this.#ctx.gate.budgets();
  }

  /** The budgets a model call for this person there counts against (docs/budgets.md). */
  budgetsFor(requester: Requester, reply: ReplyTarget): Budget[] {
    return this.#ctx.gate.budgetsFor(requester, reply);
  }

  /** Whether the policy in force names any group of `platform`: where not, nobody's groups are looked up. */
  namesGroups(platform: string): boolean {
    return this.#ctx.gate.namesGroups(platform);
  }

  /** The groups the policy's budgets name on a platform: what to look up for someone whose groups are unknown. */
  budgetGroups(platform: string): string[] {
    return this.#ctx.gate.budgetGroups(platform);
  }

  /** Expires stale envelopes (housekeeping): see expire.ts. */
  expireStale(): Promise<number> {
    return expireStale(this.#ctx);
  }
}
