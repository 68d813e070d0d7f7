import type { ApprovalCard, ClickedMessage } from '../core/approval-card.ts';
import { ReplyTarget } from '../core/reply-target.ts';
import { fullDiffValue } from '../core/buttons.ts';
import type { PostedMessage } from '../reply/outbound.ts';
import { fullArgs, makeVisible, prettyArgs } from './card.ts';
import type { ApprovalContext } from './context.ts';
import { parseCalls, type CallPolicy, type EnvelopeRow } from './envelope.ts';
import { formatPattern } from '../policy/index.ts';
import { findEnvelopeById, setCardMessage } from './store.ts';
import { refreshCopies, routeOf, sendCopies } from './route.ts';
import { personKey, type Requester } from '../core/person.ts';

function label(person: Requester & { displayName?: string }): string {
  return makeVisible(person.displayName ?? personKey(person));
}

/** Who may decide a call, and which rule asked: "needs a countersignature: sre (not the requester) · rule kubectl". */
function whoMayDecide(policy: CallPolicy | undefined): string | undefined {
  if (!policy) return undefined;
  const approvers = policy.approvers.map(formatPattern).join(', ');
  const rule = `rule ${policy.rule.name}${policy.why ? ` · ${makeVisible(policy.why)}` : ''}`;
  if (policy.outcome === 'countersign') {
    return approvers
      ? `needs a countersignature by ${approvers}, not the requester · ${rule}`
      : `nobody may approve this call, only deny it · ${rule}`;
  }
  return `the requester${approvers ? ` or ${approvers}` : ''} may decide · ${rule}`;
}

/**
 * Posts the card of a pending envelope (the show-card job), then its copies for the people who can
 * decide (route.ts). Run again after a crash, it posts only what is missing. A click (or the expiry)
 * while the card was being posted found no card on record to edit (`refreshCard` then draws
 * nothing: posting another card would duplicate it); so once its messages are on record, the card
 * is drawn again if the envelope changed meanwhile. `parkedTextFirst` (the worker's reply outbox)
 * resolves once the parked turn's text posts no more messages, so the card is posted below them.
 */
export async function showPendingCard(
  ctx: ApprovalContext,
  envelopeId: string,
  parkedTextFirst?: (workItemId: string) => Promise<void>,
): Promise<void> {
  const envelope = await pendingEnvelope(ctx, envelopeId, parkedTextFirst);
  if (!envelope) return;
  const card = await renderCard(ctx, envelope, 'pending');
  if (!envelope.card_message_id) {
    // A platform rate limit is waited out here: failing the job would put the card behind
    // graphile-worker's exponential retry delay while a person waits for it.
    const shown = await waitingOutRateLimits(ctx, envelopeId, () => showCard(ctx, envelope, card));
    await setCardMessage(ctx.pool, envelopeId, shown.messageId);
    envelope.card_message_id = shown.messageId;
    // Once, with the card: the requester's private Connect links for the accounts its calls need.
    await sendConnectLinks(ctx, envelope);
  }
  await sendCopies(ctx, envelope, card);
  await redrawIfChangedSince(ctx, envelope);
}

/**
 * The envelope while it is pending. With no card yet, the parked turn's text comes first; the
 * envelope is read again after that wait, so a card withdrawn (a newer message) or expired meanwhile
 * is never posted.
 */
async function pendingEnvelope(
  ctx: ApprovalContext,
  envelopeId: string,
  parkedTextFirst: ((workItemId: string) => Promise<void>) | undefined,
): Promise<EnvelopeRow | undefined> {
  const envelope = await findEnvelopeById(ctx.pool, envelopeId);
  if (!envelope || envelope.status !== 'pending') return undefined;
  if (envelope.card_message_id || !parkedTextFirst) return envelope;
  await parkedTextFirst(envelope.work_item_id);
  const now = await findEnvelopeById(ctx.pool, envelopeId);
  return now?.status === 'pending' ? now : undefined;
}

/** Private Connect links to the requester, one per per-person server the card's calls wait for. */
async function sendConnectLinks(ctx: ApprovalContext, envelope: EnvelopeRow): Promise<void> {
  const gate = ctx.connections;
  if (!gate) return;
  const servers = new Set<string>();
  for (const call of parseCalls(envelope)) {
    const server = await gate.missing(envelope.requester, call);
    if (server) servers.add(server);
  }
  const reply = ReplyTarget.parse(envelope.reply);
  for (const server of servers) {
    await gate
      .sendLink(envelope.requester, reply, server, { workItemId: envelope.work_item_id, nonce: envelope.nonce })
      .catch((error: unknown) => ctx.log.warn({ err: error, server }, 'could not send a Connect link'));
  }
}

/** The card state an envelope's status is drawn in. */
const CARD_STATE = {
  pending: 'pending',
  consumed: 'decided',
  expired: 'expired',
  superseded: 'superseded',
} as const satisfies Record<EnvelopeRow['status'], ApprovalCard['state']>;

/** What a drawn card depends on that a click or the expiry changes. */
const drawnState = (envelope: EnvelopeRow) =>
  JSON.stringify([envelope.status, envelope.partial_decisions, envelope.decisions]);

/** Draws the card again when the envelope changed after `drawn` was read (a click while it was posted). */
async function redrawIfChangedSince(ctx: ApprovalContext, drawn: EnvelopeRow): Promise<void> {
  const now = await findEnvelopeById(ctx.pool, drawn.id);
  if (!now || drawnState(now) === drawnState(drawn)) return;
  await refreshCard(ctx, now, CARD_STATE[now.status]);
}

/** Runs `show`, waiting out up to four platform rate limits (errors carrying `retryAfterMs`). */
async function waitingOutRateLimits<T>(ctx: ApprovalContext, envelopeId: string, show: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await show();
    } catch (error) {
      const wait = (error as { retryAfterMs?: unknown }).retryAfterMs;
      if (typeof wait !== 'number' || attempt >= 5) throw error;
      ctx.log.warn({ envelopeId, retryInMs: wait }, 'approval card rate limited; retrying');
      await new Promise((r) => setTimeout(r, Math.min(wait, 30_000)));
    }
  }
}

/**
 * Updates the card (and its copies) in place; a failure is logged, never undoes the decision. With
 * `clicked` (the click being answered), the clicked card message is replaced through the click.
 */
export async function refreshCard(
  ctx: ApprovalContext,
  envelope: EnvelopeRow,
  state: ApprovalCard['state'],
  clicked?: ClickedMessage,
): Promise<void> {
  const card = await renderCard(ctx, envelope, state);
  try {
    // No card on record yet: the show-card job is still posting it, and draws this state itself
    // once its messages are on record. Posting here would put a second card beside it.
    if (envelope.card_message_id)
      // A card left showing its buttons after the decision would invite clicks that can only fail.
      await waitingOutRateLimits(ctx, envelope.id, () => showCard(ctx, envelope, card, clicked));
  } catch (error) {
    ctx.log.warn({ err: error, envelopeId: envelope.id }, 'could not update the approval card');
  }
  await refreshCopies(ctx, envelope, card);
}

/** The platform-neutral card model of an envelope in `state`; adapters turn it into blocks or components. */
async function renderCard(
  ctx: ApprovalContext,
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
  const routed = routeOf(ctx, envelope).note;
  const cardCalls = [];
  for (const [index, c] of calls.entries()) {
    const tool = ctx.tools.get(c.name);
    let detail: string | undefined;
    try {
      detail = await tool?.describeForApproval?.(c.args, {
        workItemId: envelope.work_item_id,
        conversationId: envelope.conversation_id,
        requester: envelope.requester,
        signal: AbortSignal.timeout(5000),
        log: ctx.log,
      });
    } catch (error) {
      ctx.log.warn({ err: error, tool: c.name }, 'could not describe a call for its approval card');
    }
    const who = whoMayDecide(c.policy);
    cardCalls.push({
      index,
      id: c.id,
      tool: makeVisible(c.name),
      argsPretty: prettyArgs(c.args),
      argsFull: fullArgs(c.args),
      risk: c.risk,
      ...(detail ? { detail: makeVisible(detail) } : {}),
      ...(who ? { who } : {}),
      ...(c.policy?.grant ? { grant: c.policy.grant.covers } : {}),
    });
  }
  return {
    envelopeId: envelope.id,
    nonce: envelope.nonce,
    kind: envelope.kind,
    calls: cardCalls,
    ...(question
      ? {
          question: makeVisible(String(question.args.question ?? '')),
          options: ((question.args.options as string[] | undefined) ?? []).map(makeVisible),
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
      ...('reason' in d && d.reason !== undefined ? { reason: d.reason } : {}),
      ...(d.grantId !== undefined ? { grantId: d.grantId } : {}),
      by: label(deciders.get(d.toolCallId) ?? by ?? envelope.requester),
    })),
    ...(envelope.decided_at ? { decidedAt: envelope.decided_at } : {}),
    ...(routed ? { routedTo: routed } : {}),
    ...changeCardOf(ctx, envelope.nonce, calls),
  };
}

/**
 * A card whose one call lands a change (a tool of kind `merge`) is a change card: its buttons say
 * Merge into the base and Discard, and it offers the full diff as a file (docs/code-work.md).
 */
function changeCardOf(
  ctx: ApprovalContext,
  nonce: string,
  calls: ReturnType<typeof parseCalls>,
): Pick<ApprovalCard, 'change'> {
  const [only, ...rest] = calls;
  if (!only || rest.length > 0 || ctx.tools.get(only.name)?.kind !== 'merge') return {};
  const base = typeof only.args.base === 'string' ? only.args.base : 'the base';
  return {
    change: {
      approveLabel: `Merge into ${base}`.slice(0, 60),
      denyLabel: 'Discard',
      fullDiffValue: fullDiffValue(nonce),
    },
  };
}

/** Posts the card, or updates it in place when the envelope already has one. */
async function showCard(
  ctx: ApprovalContext,
  envelope: EnvelopeRow,
  card: ApprovalCard,
  clicked?: ClickedMessage,
): Promise<PostedMessage> {
  const target: ReplyTarget = { ...ReplyTarget.parse(envelope.reply), messageId: undefined };
  return ctx.cards
    .for(target)
    .show(target, withOwnerMention(envelope, target, card), envelope.card_message_id ?? undefined, clicked);
}

/**
 * A card posted by a run nobody watches (a scheduled run) mentions its requester where it is posted,
 * so the owner hears of it; copies to approvers (route.ts) do not.
 */
function withOwnerMention(envelope: EnvelopeRow, target: ReplyTarget, card: ApprovalCard): ApprovalCard {
  if (!target.unattended || envelope.requester.platform !== target.platform) return card;
  return { ...card, mention: envelope.requester.userId };
}
