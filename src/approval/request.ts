import { randomUUID } from 'node:crypto';
import type { PoolClient } from '../db/pool.ts';
import type { Message, ToolCall } from '../agent/messages.ts';
import { admitArgs, riskOf } from '../agent/tools/tool.ts';
import type { Queryable } from '../db/pool.ts';
import { movedPathsNote } from './real-paths.ts';
import { judgeAndDecide } from './taint.ts';
import { QUESTION_TOOL } from '../agent/tools/request-human-approval.ts';
import type { TurnState } from '../agent/turn-state.ts';
import type { WorkItem } from '../core/work-item.ts';
import { scheduleApprovalCard } from '../queue/turn-lifecycle.ts';
import { canonicalJson } from './canonical-json.ts';
import type { ApprovalContext } from './context.ts';
import { newNonce, planHash, scopeHash, type CallPolicy, type PlannedCall } from './envelope.ts';
import { formatPattern } from '../policy/index.ts';
import { grantOffer } from './grants.ts';
import { waitsForConnection } from './connections.ts';
import { personKey } from '../core/person.ts';
import { audit, insertEnvelope } from './store.ts';
import { traceCarrier } from '../telemetry/spans.ts';

/**
 * The calls as a person decides on them, each with its risk. A call whose tool is unknown or whose
 * arguments don't parse is high risk: nothing vouches for what it would do. Resume plans again and
 * compares, so this must stay a pure function of the calls and the tool registry.
 */
export function planCalls(ctx: Pick<ApprovalContext, 'tools'>, calls: ToolCall[]): PlannedCall[] {
  return calls.map((c) => {
    const tool = ctx.tools.get(c.name);
    const admitted = tool ? admitArgs(tool, c.args) : undefined;
    return {
      id: c.id,
      name: c.name,
      args: c.args,
      risk: tool && admitted?.ok ? riskOf(tool, admitted.args) : 'high',
    };
  });
}

/**
 * The calls with the policy's decision on each, as the card shows them and clicks are checked
 * against. A call the policy would now let run or refuse (it changed since the loop asked) still
 * waits for a person: allowed calls ask, refused ones can only be denied (nobody may approve them).
 */
async function planWithPolicy(
  ctx: ApprovalContext,
  db: Queryable,
  item: WorkItem,
  calls: ToolCall[],
): Promise<PlannedCall[]> {
  const out: PlannedCall[] = [];
  for (const planned of planCalls(ctx, calls)) {
    const { decision, judged } = await judgeAndDecide(
      ctx,
      db,
      planned,
      item.requester,
      item.reply,
      item.conversationId,
    );
    // A grant names the real paths, as the grant match later judges them.
    const grant = grantOffer(
      { name: planned.name, args: judged.args },
      decision,
      ctx.gate.whereOf(item.reply),
      ctx.settings.grantTtlSeconds ?? 0,
    );
    const missing = decision.outcome === 'deny' ? undefined : await ctx.connections?.missing(item.requester, planned);
    const why = [
      decision.outcome === 'countersign' ? decision.message : undefined,
      movedPathsNote(judged.moved),
      missing ? waitsForConnection(item.requester.displayName ?? personKey(item.requester), missing) : undefined,
    ]
      .filter(Boolean)
      .join(' · ');
    const policy: CallPolicy =
      decision.outcome === 'deny'
        ? { outcome: 'countersign', rule: decision.rule, approvers: [], home: decision.home }
        : {
            outcome: decision.outcome === 'countersign' ? 'countersign' : 'ask',
            rule: decision.rule,
            approvers: decision.approvers,
            home: decision.home,
            ...(grant ? { grant } : {}),
            ...(why ? { why } : {}),
            ...(decision.vouchesFor ? { vouchesFor: decision.vouchesFor } : {}),
            ...(judged.content ? { content: { sha256: judged.content.sha256, size: judged.content.size } } : {}),
            ...coRequestersOf(ctx, planned),
            ...(missing && decision.outcome === 'allow' ? { onlyForConnection: true } : {}),
          };
    out.push({ ...planned, risk: decision.risk, policy });
  }
  return out;
}

/** The call's other requesters, as its tool names them (a change's authors). */
function coRequestersOf(ctx: ApprovalContext, call: PlannedCall): Pick<CallPolicy, 'coRequesters'> {
  const tool = ctx.tools.get(call.name);
  const admitted = tool?.coRequesters ? admitArgs(tool, call.args) : undefined;
  const people = admitted?.ok ? tool!.coRequesters!(admitted.args) : [];
  return people.length ? { coRequesters: [...new Set(people)] } : {};
}

const WITHDRAWN = (names: string) =>
  `(I asked to run ${names}; that request was withdrawn, unanswered, when a newer message came.)`;

/**
 * The parked turn as the conversation's history keeps it if a newer message withdraws its card:
 * every call that already ran (allowed, covered by a grant, approved earlier in the turn) stays with
 * its result, so the model knows its effects happened; only the calls still waiting for a person
 * are named as withdrawn, in words (a call without a result would be refused by the model APIs).
 */
function withdrawnHistory(state: TurnState): Message[] {
  const waiting = new Set(state.pendingApproval.map((c) => c.id));
  return state.messages.map((m): Message => {
    if (m.role !== 'assistant' || !m.toolCalls.some((c) => waiting.has(c.id))) return m;
    const withdrawn = m.toolCalls.filter((c) => waiting.has(c.id)).map((c) => c.name);
    return {
      role: 'assistant',
      text: [m.text.trim(), WITHDRAWN(withdrawn.join(', '))].filter(Boolean).join(' '),
      toolCalls: m.toolCalls.filter((c) => !waiting.has(c.id)),
    };
  });
}

/**
 * Stores the envelope for a turn's waiting calls, inside the caller's transaction (the one that
 * records the turn as parked), with the job that shows its card.
 */
export async function requestApproval(
  ctx: ApprovalContext,
  client: PoolClient,
  item: WorkItem,
  state: TurnState,
): Promise<void> {
  const calls = await planWithPolicy(ctx, client, item, state.pendingApproval);
  const callsCanonical = canonicalJson(calls);
  const scope = ctx.scope(
    calls.map((c) => c.name),
    item.conversationId,
  );
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
    // Everyone any of the calls names, for the record; clicks are checked per call (verify.ts).
    approvers: [...new Set(calls.flatMap((c) => (c.policy?.approvers ?? []).map(formatPattern)))],
    twoPersonRule: ctx.settings.twoPersonRule,
    callsCanonical,
    planHash: planHash(callsCanonical),
    scope,
    scopeHash: scopeHash(scope),
    // The parked run's trace context rides along: the approval wait and the continuation join its trace.
    turnState: { ...state, ...traceCarrier() },
    withdrawnMessages: withdrawnHistory(state),
    reply: item.reply,
    ttlSeconds: ctx.settings.ttlSeconds,
  });
  await audit(client, {
    envelopeId: id,
    nonce,
    event: 'requested',
    actor: item.requester,
    detail: { calls: calls.map((c) => c.name), rules: calls.map((c) => c.policy?.rule.name) },
  });
  // The card is shown by its own job, committed with the envelope: a worker that dies right after
  // parking the turn can't leave an envelope nobody can see.
  await scheduleApprovalCard(client, id);
}
