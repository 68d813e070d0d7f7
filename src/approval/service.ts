import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { Counter } from 'prom-client';
import { registry } from '../metrics.ts';
import { transaction, type Pool, type PoolClient } from '../db/pool.ts';
import type { ToolCall } from '../agent/messages.ts';
import type { ToolRegistry } from '../agent/tools/registry.ts';
import { riskOf } from '../agent/tools/tool.ts';
import type { Requester } from '../core/person.ts';
import { TurnState } from '../agent/turn-state.ts';
import type { OutboundRegistry, PostedMessage } from '../reply/outbound.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import { ReplyTarget as ReplyTargetSchema } from '../core/reply-target.ts';
import { continueParkedTurn, expireParkedTurn, scheduleApprovalCard } from '../queue/turn-lifecycle.ts';
import { TEXTS } from '../core/texts.ts';
import { newWorkItem, Priority, type CallDecision, type WorkItem } from '../core/work-item.ts';
import { canonicalJson } from './canonical-json.ts';
import { cardButtons, cardText, prettyArgs } from './card.ts';
import { type ApprovalCard } from '../core/approval-card.ts';
import { ButtonPayload } from '../core/buttons.ts';
import { newNonce, PlannedCall, planHash, scopeHash, type ApprovalScope, type EnvelopeRow } from './envelope.ts';
import {
  audit,
  auditRejection,
  consumeNonce,
  expireEnvelopes,
  findEnvelopeById,
  findEnvelopeByNonce,
  insertEnvelope,
  recordPartialDecisions,
  setCardMessage,
} from './store.ts';
import {
  alreadyDecided,
  qualifiedId,
  verifyAdded,
  verifyCoverage,
  verifyOpen,
  type RecordedDecision,
} from './verify.ts';
import { QUESTION_TOOL } from '../agent/tools/request-human-approval.ts';

/** The job that shows an approval card (interactive pool: a person is waiting for it). */
export const SHOW_CARD_TASK = 'countersign_show_approval_card';

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

export interface ApprovalSettings {
  ttlSeconds: number;
  approvers: string[];
  twoPersonRule: boolean;
  /** Rejected clicks audited per clicker per minute; default REJECTION_AUDITS_PER_MINUTE. */
  rejectionAuditsPerMinute?: number;
}

export type SubmitResult =
  | { ok: true; continuation: WorkItem; envelope: EnvelopeRow }
  | { ok: true; partial: true; envelope: EnvelopeRow }
  | { ok: false; reason: string };

function label(person: Requester & { displayName?: string }): string {
  return person.displayName ?? qualifiedId(person);
}

function parseCalls(envelope: EnvelopeRow): PlannedCall[] {
  return PlannedCall.array().parse(JSON.parse(envelope.calls));
}

/**
 * Approvals, platform-neutral: parks a turn behind a single-use envelope, verifies and consumes
 * clicks, and hands a consumed decision to its continuation. Adapters only render cards and pass
 * clicks in; nothing here knows Slack or Discord.
 */
export class ApprovalService {
  readonly #pool: Pool;
  readonly #outbounds: OutboundRegistry;
  readonly #tools: ToolRegistry;
  readonly #settings: ApprovalSettings;
  readonly #scope: () => ApprovalScope;
  readonly #log: Logger;

  constructor(options: {
    pool: Pool;
    outbounds: OutboundRegistry;
    tools: ToolRegistry;
    settings: ApprovalSettings;
    scope: () => ApprovalScope;
    log: Logger;
  }) {
    this.#pool = options.pool;
    this.#outbounds = options.outbounds;
    this.#tools = options.tools;
    this.#settings = options.settings;
    this.#scope = options.scope;
    this.#log = options.log;
  }

  #plan(calls: ToolCall[]): PlannedCall[] {
    return calls.map((c) => {
      const tool = this.#tools.get(c.name);
      const parsed = tool?.input.safeParse(c.args);
      return {
        id: c.id,
        name: c.name,
        args: c.args,
        risk: tool && parsed?.success ? riskOf(tool, parsed.data) : 'high',
      };
    });
  }

  /**
   * Stores the envelope for a turn's waiting calls, inside the caller's transaction (the one that
   * records the turn as parked), with the job that shows its card.
   */
  async park(client: PoolClient, item: WorkItem, state: TurnState): Promise<void> {
    const calls = this.#plan(state.pendingApproval);
    const callsCanonical = canonicalJson(calls);
    const scope = this.#scope();
    const id = randomUUID();
    const nonce = newNonce();
    const kind = calls.length === 1 && calls[0]?.name === QUESTION_TOOL ? 'question' : 'tools';
    await insertEnvelope(client, {
      id,
      nonce,
      kind,
      contextId: item.input.approvalContextId ?? item.id,
      workItemId: item.id,
      conversationId: item.conversationId,
      requester: item.requester,
      approvers: this.#settings.approvers,
      twoPersonRule: this.#settings.twoPersonRule,
      callsCanonical,
      planHash: planHash(callsCanonical),
      scope,
      scopeHash: scopeHash(scope),
      turnState: state,
      reply: item.reply,
      ttlSeconds: this.#settings.ttlSeconds,
    });
    await audit(client, {
      envelopeId: id,
      nonce,
      event: 'requested',
      actor: item.requester,
      detail: { calls: calls.map((c) => c.name) },
    });
    // The card is shown by its own job, committed with the envelope: a worker that dies right after
    // parking the turn can't leave an envelope nobody can see.
    await scheduleApprovalCard(client, SHOW_CARD_TASK, id);
  }

  /** Posts the card of a pending envelope that has none yet (the show-card job). */
  async showPendingCard(envelopeId: string): Promise<void> {
    const envelope = await findEnvelopeById(this.#pool, envelopeId);
    if (!envelope || envelope.status !== 'pending' || envelope.card_message_id) return;
    const card = await this.#card(envelope, 'pending');
    // A platform rate limit is waited out here: failing the job would put the card behind
    // graphile-worker's exponential retry delay while a person waits for it.
    for (let attempt = 1; ; attempt++) {
      try {
        const shown = await this.#showCard(envelope, card);
        await setCardMessage(this.#pool, envelopeId, shown.messageId);
        return;
      } catch (error) {
        const wait = (error as { retryAfterMs?: unknown }).retryAfterMs;
        if (typeof wait !== 'number' || attempt >= 5) throw error;
        this.#log.warn({ envelopeId, retryInMs: wait }, 'approval card rate limited; retrying');
        await new Promise((r) => setTimeout(r, Math.min(wait, 30_000)));
      }
    }
  }

  async #card(
    envelope: EnvelopeRow,
    state: ApprovalCard['state'],
    expiresAt = envelope.expires_at,
  ): Promise<ApprovalCard> {
    const calls = parseCalls(envelope);
    const question = envelope.kind === 'question' ? calls[0] : undefined;
    const decided = envelope.decisions ?? envelope.partial_decisions;
    // Who decided each call: recorded per call (the consuming click records them all); envelopes
    // consumed before that name only the last clicker.
    const deciders = new Map(envelope.partial_decisions.map((d) => [d.toolCallId, d.by] as const));
    const by = envelope.decided_by;
    const cardCalls = [];
    for (const [index, c] of calls.entries()) {
      const tool = this.#tools.get(c.name);
      let detail: string | undefined;
      try {
        detail = await tool?.describeForApproval?.(c.args, {
          workItemId: envelope.work_item_id,
          conversationId: envelope.conversation_id,
          requester: envelope.requester,
          signal: AbortSignal.timeout(5000),
          log: this.#log,
        });
      } catch (error) {
        this.#log.warn({ err: error, tool: c.name }, 'could not describe a call for its approval card');
      }
      cardCalls.push({
        index,
        id: c.id,
        tool: c.name,
        argsPretty: prettyArgs(c.args),
        risk: c.risk,
        ...(detail ? { detail } : {}),
      });
    }
    return {
      envelopeId: envelope.id,
      nonce: envelope.nonce,
      kind: envelope.kind,
      calls: cardCalls,
      ...(question
        ? {
            question: String(question.args.question ?? ''),
            options: (question.args.options as string[] | undefined) ?? [],
          }
        : {}),
      planHashPrefix: envelope.plan_hash.slice(0, 12),
      expiresAt,
      requesterLabel: label(envelope.requester),
      state,
      decisions: decided.map((d) => ({
        index: calls.findIndex((c) => c.id === d.toolCallId),
        approved: d.approved,
        ...(d.answer !== undefined ? { answer: d.answer } : {}),
        by: label(deciders.get(d.toolCallId) ?? by ?? envelope.requester),
      })),
      ...(envelope.decided_at ? { decidedAt: envelope.decided_at } : {}),
    };
  }

  async #showCard(envelope: EnvelopeRow, card: ApprovalCard): Promise<PostedMessage> {
    const target: ReplyTarget = { ...ReplyTargetSchema.parse(envelope.reply), messageId: undefined };
    const outbound = this.#outbounds.for(target);
    const existing = envelope.card_message_id ?? undefined;
    if (outbound.showApprovalCard) return outbound.showApprovalCard(target, card, existing);
    const text = cardText(card);
    const options = { buttons: cardButtons(card) };
    if (existing) {
      await outbound.edit(target, existing, text, options);
      return { messageId: existing };
    }
    return outbound.post(target, text, options);
  }

  /** Updates the card in place; a failure is logged, never undoes the decision. */
  async #refreshCard(envelope: EnvelopeRow, state: ApprovalCard['state']): Promise<void> {
    try {
      await this.#showCard(envelope, await this.#card(envelope, state));
    } catch (error) {
      this.#log.warn({ err: error, envelopeId: envelope.id }, 'could not update the approval card');
    }
  }

  /**
   * A button click: `value` is the button's payload (nonce + decision). Anything invalid is rejected
   * before the nonce is consumed, with a reason meant only for the clicker.
   */
  async click(value: string, clicker: Requester): Promise<SubmitResult> {
    const payload = ButtonPayload.safeParse(value);
    if (!payload.success) {
      return this.#reject(undefined, undefined, clicker, 'That button is not a valid approval button.', {
        auditReason: 'malformed button payload',
        detail: { length: value.length },
      });
    }
    const { nonce, decision } = payload.data;
    return this.#decide(nonce, clicker, { decision }, (envelope, calls) => {
      const recorded = new Map(envelope.partial_decisions.map((d) => [d.toolCallId, d] as const));
      if (decision === 'A' || decision === 'D') {
        // Approve all / Deny all decide the calls nobody has decided yet; recorded decisions stand.
        return calls.filter((c) => !recorded.has(c.id)).map((c) => ({ toolCallId: c.id, approved: decision === 'A' }));
      }
      // A Stop button's payload shares the format but is no decision (adapters route it to stopTurn).
      if (decision === 'S') return { reason: 'That button is not an approval decision.' };
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
   * The verify-and-consume path of UIs that send every decision at once (the console): a full set of
   * decisions for an envelope's calls. Calls someone already decided must be given the same decision.
   */
  async submit(nonce: string, decisions: CallDecision[], clicker: Requester): Promise<SubmitResult> {
    return this.#decide(nonce, clicker, { decisions }, (envelope, calls) => {
      const coverage = verifyCoverage(calls, decisions);
      if (!coverage.ok) return coverage;
      const recorded = new Map(envelope.partial_decisions.map((d) => [d.toolCallId, d] as const));
      const added: CallDecision[] = [];
      for (const d of decisions) {
        const earlier = recorded.get(d.toolCallId);
        if (!earlier) added.push(d);
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
  async #decide(
    nonce: string,
    clicker: Requester,
    detail: unknown,
    choose: (envelope: EnvelopeRow, calls: PlannedCall[]) => CallDecision[] | { reason: string },
  ): Promise<SubmitResult> {
    for (let attempt = 0; attempt < MAX_DECISION_ATTEMPTS; attempt++) {
      const read = await findEnvelopeByNonce(this.#pool, nonce);
      const open = verifyOpen(read, clicker);
      if (!open.ok) return this.#reject(read, nonce, clicker, open.reason, { detail });
      const { envelope } = open;
      const calls = parseCalls(envelope);
      const chosen = choose(envelope, calls);
      if (!Array.isArray(chosen)) return this.#reject(envelope, nonce, clicker, chosen.reason, { detail });
      const verdict = verifyAdded(envelope, calls, chosen, clicker);
      if (!verdict.ok) return this.#reject(envelope, nonce, clicker, verdict.reason, { detail });
      const decided = [...envelope.partial_decisions, ...chosen.map((d) => ({ ...d, by: clicker }))];
      const outcome =
        decided.length === calls.length
          ? await this.#consume(envelope, calls, decided, clicker, detail)
          : await this.#recordPartial(envelope, chosen, decided, clicker, detail);
      if (outcome) return outcome;
      this.#log.debug({ envelopeId: envelope.id, attempt }, 'approval decision lost a race; re-reading');
    }
    return this.#reject(undefined, nonce, clicker, 'Too many people are deciding on this request at once; try again.', {
      detail,
    });
  }

  async #recordPartial(
    envelope: EnvelopeRow,
    chosen: CallDecision[],
    decided: RecordedDecision[],
    clicker: Requester,
    detail: unknown,
  ): Promise<SubmitResult | undefined> {
    const updated = await transaction(this.#pool, async (client) => {
      const row = await recordPartialDecisions(client, envelope.nonce, envelope.partial_decisions_read, decided);
      if (!row) return undefined;
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
    await this.#refreshCard(updated, 'pending');
    return { ok: true, partial: true, envelope: updated };
  }

  async #consume(
    envelope: EnvelopeRow,
    calls: PlannedCall[],
    decided: RecordedDecision[],
    clicker: Requester,
    detail: unknown,
  ): Promise<SubmitResult | undefined> {
    // In the order of the calls, as the continuation and the card read them.
    const byId = new Map(decided.map((d) => [d.toolCallId, d] as const));
    const inOrder = calls.map((c) => byId.get(c.id)!);
    const decisions: CallDecision[] = inOrder.map(({ toolCallId, approved, answer }) =>
      answer === undefined ? { toolCallId, approved } : { toolCallId, approved, answer },
    );
    const reply = ReplyTargetSchema.parse(envelope.reply);
    const continuation = newWorkItem({
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: envelope.conversation_id,
      requester: envelope.requester,
      input: {
        approval: { envelopeId: envelope.id, decisions, decidedBy: clicker },
        approvalContextId: envelope.context_id,
      },
      payload: {},
      reply: { ...reply, messageId: undefined },
    });
    const consumed = await transaction(this.#pool, async (client) => {
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
    if (!consumed) return undefined;
    await this.#refreshCard(consumed, 'decided');
    return { ok: true, continuation, envelope: consumed };
  }

  /**
   * Refuses a click. Its audit row counts against the clicker's per-minute budget, so a flood of
   * forged clicks cannot grow the audit log without bound; past the budget it is only counted.
   */
  async #reject(
    envelope: EnvelopeRow | undefined,
    nonce: string | undefined,
    clicker: Requester,
    reason: string,
    options: { auditReason?: string; detail?: unknown } = {},
  ): Promise<SubmitResult> {
    const written = await auditRejection(
      this.#pool,
      {
        envelopeId: envelope?.id,
        nonce,
        actor: clicker,
        actorKey: qualifiedId(clicker),
        reason: options.auditReason ?? reason,
        detail: options.detail,
      },
      this.#settings.rejectionAuditsPerMinute ?? REJECTION_AUDITS_PER_MINUTE,
    );
    if (!written) unauditedRejections.inc();
    return { ok: false, reason };
  }

  /**
   * For a continuation: re-checks the consumed envelope (plan hash, scope) and returns the parked
   * turn with the decisions applied, or why it must not run.
   */
  async resume(item: WorkItem, log: Logger): Promise<{ state: TurnState } | { refused: string }> {
    const approval = item.input.approval;
    const envelope = approval ? await findEnvelopeById(this.#pool, approval.envelopeId) : undefined;
    const refuse = async (reason: string, detail?: unknown) => {
      log.warn({ envelopeId: envelope?.id, reason }, 'approval continuation refused');
      await audit(this.#pool, { envelopeId: envelope?.id, nonce: envelope?.nonce, event: 'refused', reason, detail });
      if (envelope) await this.#refreshCard(envelope, 'refused');
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
    const planned = this.#plan(state.pendingApproval);
    if (
      canonicalJson(planned.map(({ id, name, args }) => ({ id, name, args }))) !==
      canonicalJson(parseCalls(envelope).map(({ id, name, args }) => ({ id, name, args })))
    ) {
      return refuse('the requested calls changed after they were shown for approval (plan hash mismatch).');
    }
    const current = this.#scope();
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
  async recordOutcome(envelopeId: string, call: ToolCall, decision: CallDecision, isError: boolean): Promise<void> {
    const event = decision.answer !== undefined ? 'answered' : decision.approved ? 'executed' : 'denied';
    await audit(this.#pool, { envelopeId, event, detail: { call: call.id, tool: call.name, isError } });
  }

  /** Expires stale envelopes (housekeeping): cards say so, turns end with a clear message, nothing runs. */
  async expireStale(): Promise<number> {
    const expired = await expireEnvelopes(this.#pool);
    for (const envelope of expired) {
      await audit(this.#pool, { envelopeId: envelope.id, nonce: envelope.nonce, event: 'expired' });
      await this.#refreshCard(envelope, 'expired');
      try {
        const target = ReplyTargetSchema.parse(envelope.reply);
        await this.#outbounds.for(target).post({ ...target, messageId: undefined }, TEXTS.approvalExpired);
      } catch (error) {
        this.#log.warn({ err: error, envelopeId: envelope.id }, 'could not announce an expired approval');
      }
      await expireParkedTurn(this.#pool, envelope.work_item_id, envelope.conversation_id);
    }
    return expired.length;
  }
}
