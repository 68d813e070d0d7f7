import type { Queryable } from '../db/pool.ts';
import type { ToolCall } from '../agent/messages.ts';
import type { Requester } from '../core/person.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import type { Decision } from '../policy/index.ts';
import { mayBeSamePerson } from '../core/person.ts';
import type { ApprovalContext } from './context.ts';
import type { EnvelopeRow } from './envelope.ts';
import { changedPaths, clearChangesBefore, insertWorkspaceChanges } from './taint-store.ts';
import { pathsOf } from '../policy/call-args.ts';

/**
 * The taint of a workspace (docs/policy.md): one person's approval may change files, and another
 * one-person approval may run a program, but never both in a row — a program that would read files
 * changed on one person's say runs only with a second person's countersignature, whose card names
 * those files. The floor list of risky paths catches the obvious cases; this is the guarantee.
 */

type Call = Pick<ToolCall, 'name' | 'args'>;

function workspaceOf(ctx: Pick<ApprovalContext, 'scope'>): string {
  return ctx.scope([]).workspaceRoot;
}

/**
 * The policy's decision on a call, with the workspace's changed files when the call runs a program.
 * Every place that decides a call (the loop's ruling, the card, a click, the resume, a grant) asks here.
 */
export async function decideCall(
  ctx: ApprovalContext,
  db: Queryable,
  call: Call,
  requester: Requester,
  reply: ReplyTarget,
): Promise<Decision> {
  const changedFiles = ctx.gate.executes(call) ? await changedPaths(db, workspaceOf(ctx)) : [];
  return ctx.gate.decide(call, requester, reply, { changedFiles });
}

/** The real workspace paths a call writes or deletes, or none when it changes no file. */
function pathsChangedBy(ctx: ApprovalContext, call: Call): string[] {
  const judged = ctx.gate.judge(call);
  if (judged.tool.kind !== 'write' && judged.tool.kind !== 'delete') return [];
  const paths = pathsOf(judged.args);
  return paths.length > 0 ? paths : ['(a path the call did not name)'];
}

/**
 * Records the files a call changes on one person's say: allowed by a rule, covered by a grant, or
 * approved by its requester. Only where a second person can sign at all; otherwise nothing would
 * ever clear the record.
 */
export async function recordOnePersonChange(
  ctx: ApprovalContext,
  db: Queryable,
  call: Call,
  workItemId: string,
  by: Requester,
): Promise<void> {
  if (!ctx.gate.hasApprovers()) return;
  const paths = pathsChangedBy(ctx, call);
  if (paths.length === 0) return;
  const workspace = workspaceOf(ctx);
  await insertWorkspaceChanges(
    db,
    paths.map((path) => ({ workspace, path, tool: call.name, workItemId, by })),
  );
}

/**
 * At the click that completes a card: the approved writes that nobody but the requester approved.
 * "The requester" is decided failing closed: the same platform and user id is the same person even
 * when two payloads name different workspaces.
 */
export async function recordApprovedChanges(
  ctx: ApprovalContext,
  db: Queryable,
  envelope: EnvelopeRow,
  calls: readonly ToolCall[],
  decided: ReadonlyArray<{ toolCallId: string; approved: boolean; answer?: string; by: Requester }>,
): Promise<void> {
  for (const d of decided) {
    const call = calls.find((c) => c.id === d.toolCallId);
    if (!call || !d.approved || d.answer !== undefined) continue;
    if (!mayBeSamePerson(d.by, envelope.requester)) continue;
    await recordOnePersonChange(ctx, db, call, envelope.work_item_id, envelope.requester);
  }
}

/**
 * After a program ran that a second person countersigned: the files its card named are vouched for.
 * Changes recorded after the card was requested were not on it and stay.
 */
export async function clearAfterCountersignedRun(
  ctx: ApprovalContext,
  envelope: EnvelopeRow,
  call: Call,
  decider: Requester,
): Promise<void> {
  if (!ctx.gate.executes(call) || mayBeSamePerson(decider, envelope.requester)) return;
  const cleared = await clearChangesBefore(ctx.pool, workspaceOf(ctx), envelope.created_at);
  if (cleared > 0)
    ctx.log.info({ envelopeId: envelope.id, cleared }, 'a countersigned run cleared the workspace taint');
}
