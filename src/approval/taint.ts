import type { Queryable } from '../db/pool.ts';
import type { ToolCall } from '../agent/messages.ts';
import type { Requester } from '../core/person.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import type { Decision } from '../policy/index.ts';
import { mayBeSamePerson } from '../core/person.ts';
import type { ApprovalContext } from './context.ts';
import type { JudgedCall } from './gate.ts';
import { parseCalls, type CallPolicy, type EnvelopeRow } from './envelope.ts';
import { changedPaths, clearChanges, insertWorkspaceChanges } from './taint-store.ts';
import { isRecord, pathsOf } from '../policy/call-args.ts';

/**
 * The taint of a workspace (docs/policy.md): one person's approval may change files, and another
 * one-person approval may run a program, but never both in a row — a program that would read files
 * changed on one person's say runs only with a second person's countersignature, whose card names
 * those files. The floor list of risky paths catches the obvious cases; this is the guarantee.
 */

type Call = Pick<ToolCall, 'name' | 'args'>;

/**
 * The workspace the changes are recorded against. A deployment has one (AGENT_WORKSPACE_ROOT); its
 * resolved path depends on each process's working directory, so an ingress and a worker started from
 * different folders would record and read under different names. One name per deployment instead.
 */
const WORKSPACE = 'agent-workspace';

/** An MCP tool that is not read-only may run a program: its arguments name one (`command`, `script`…). */
const PROGRAM_ARGS = ['command', 'cmd', 'script', 'code', 'shell', 'program', 'args', 'argv'] as const;

/** Whether a call runs a program that could read the workspace: `exec` tools, and MCP tools that take one. */
function runsProgram(judged: JudgedCall): boolean {
  if (judged.tool.kind === 'exec') return true;
  if (judged.tool.kind !== 'mcp' || judged.tool.mcp?.readOnlyHint === true) return false;
  const args = judged.args;
  return isRecord(args) && PROGRAM_ARGS.some((key) => Object.hasOwn(args, key));
}

/**
 * The real workspace paths a call writes or deletes: those a writing tool (or an MCP tool that is not
 * read-only) names. A tool that names no path (an application's `deploy_service`) puts nothing in
 * the workspace that a program could read.
 */
function pathsChangedBy(ctx: ApprovalContext, call: Call, conversationId: string): string[] {
  const judged = ctx.gate.judge(call, conversationId);
  const kind = judged.tool.kind;
  const writes = kind === 'write' || kind === 'delete' || (kind === 'mcp' && judged.tool.mcp?.readOnlyHint !== true);
  return writes ? pathsOf(judged.args) : [];
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
  conversationId: string,
): Promise<Decision> {
  return (await judgeAndDecide(ctx, db, call, requester, reply, conversationId)).decision;
}

/** `decideCall`, also returning the judged call (real paths, what moved) for a card: one disk read. */
export async function judgeAndDecide(
  ctx: ApprovalContext,
  db: Queryable,
  call: Call,
  requester: Requester,
  reply: ReplyTarget,
  conversationId: string,
): Promise<{ decision: Decision; judged: JudgedCall }> {
  const judged = ctx.gate.judge(call, conversationId);
  const changes = runsProgram(judged) ? await changedPaths(db, WORKSPACE) : undefined;
  const decision = ctx.gate.decideJudged(judged, requester, reply, {
    ...(changes ? { changedFiles: changes.paths, changeIds: changes.ids } : {}),
  });
  return { decision, judged };
}

/** Whether a call runs a program that could read the workspace (see `runsProgram`). */
export function callRunsProgram(ctx: Pick<ApprovalContext, 'gate'>, call: Call): boolean {
  // Whether a call runs a program depends on its tool and argument names, not on where paths lead.
  return runsProgram(ctx.gate.judge(call));
}

/** The turn a work item is, as `recordOnePersonChange` records it. */
export const turnOf = (item: { id: string; conversationId: string }) => ({
  workItemId: item.id,
  conversationId: item.conversationId,
});

/**
 * Records the files a call changes on one person's say: allowed by a rule, covered by a grant, or
 * approved by its requester. Only where a second person can sign at all; otherwise nothing would
 * ever clear the record.
 */
export async function recordOnePersonChange(
  ctx: ApprovalContext,
  db: Queryable,
  call: Call,
  turn: { workItemId: string; conversationId: string },
  by: Requester,
): Promise<void> {
  if (!ctx.gate.hasApprovers()) return;
  const { workItemId, conversationId } = turn;
  const paths = pathsChangedBy(ctx, call, conversationId);
  if (paths.length === 0) return;
  await insertWorkspaceChanges(
    db,
    paths.map((path) => ({ workspace: WORKSPACE, path, tool: call.name, workItemId, by })),
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
    const turn = { workItemId: envelope.work_item_id, conversationId: envelope.conversation_id };
    await recordOnePersonChange(ctx, db, call, turn, envelope.requester);
  }
}

/**
 * At resume: a countersignature vouches only for the changes its card named. A change recorded since
 * (a rewrite of a named file counts: it is new content) means the approver did not see what the
 * program would read; the call does not run. Returns why, or undefined.
 */
export function unvouchedChanges(stored: CallPolicy | undefined, now: Decision): string | undefined {
  if (now.vouchesFor === undefined) return undefined;
  const seen = new Set(stored?.vouchesFor ?? []);
  const unseen = now.vouchesFor.filter((id) => !seen.has(id));
  if (unseen.length === 0) return undefined;
  return `the workspace changed after the card was shown (${now.message ?? 'files changed'}), so the approval does not cover what the program would read.`;
}

/**
 * After a program ran that a second person countersigned: the changes its card named are vouched
 * for, and only those (by id); anything recorded since stays.
 */
export async function clearAfterCountersignedRun(
  ctx: ApprovalContext,
  envelope: EnvelopeRow,
  call: { id: string },
  decider: Requester,
): Promise<void> {
  const vouched = parseCalls(envelope).find((c) => c.id === call.id)?.policy?.vouchesFor ?? [];
  if (vouched.length === 0 || mayBeSamePerson(decider, envelope.requester)) return;
  const cleared = await clearChanges(ctx.pool, WORKSPACE, vouched);
  if (cleared > 0)
    ctx.log.info({ envelopeId: envelope.id, cleared }, 'a countersigned run cleared the workspace taint');
}
