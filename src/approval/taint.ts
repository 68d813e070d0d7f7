import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Queryable } from '../db/pool.ts';
import type { ToolCall } from '../agent/messages.ts';
import type { Requester } from '../core/person.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import type { Decision } from '../policy/index.ts';
import { INBOX_DIR, inboxFolderOf } from '../core/inbox.ts';
import { mayBeSamePerson } from '../core/person.ts';
import type { ApprovalContext, TaintedWorkspace } from './context.ts';
import type { JudgedCall } from './gate.ts';
import type { CallPolicy, EnvelopeRow } from './envelope.ts';
import { amendBaseline, baselineVersion, readBaseline, replaceBaseline } from './taint-store.ts';
import { scanWorkspace, type WorkspaceState } from './workspace-scan.ts';
import { isRecord, pathsOf } from '../policy/call-args.ts';

/**
 * The taint of a workspace (docs/policy.md): a program that could read content only one person
 * vouched for runs only with a second person's countersignature, whose card names that content.
 * One-person content is read from the files themselves: whatever differs in the conversation's
 * workspace (or worktree) from its baseline — the state the last countersigned program run left,
 * the clean checkout, or nothing for a fresh workspace — plus the writes a second person approved.
 * So every way content arrives counts without reporting itself: a tool's write, a received file, a
 * program's output, a coding CLI's edit, an MCP server's write, and any way added later.
 */

type Call = Pick<ToolCall, 'name' | 'args'>;

/**
 * The deployment's workspace (AGENT_WORKSPACE_ROOT), by one name: its resolved path depends on each
 * process's working directory, so an ingress and a worker started from different folders would
 * otherwise keep two baselines.
 */
export const DEPLOYMENT_WORKSPACE = 'agent-workspace';

/** An MCP tool that is not read-only may run a program: its arguments name one (`command`, `script`…). */
const PROGRAM_ARGS = ['command', 'cmd', 'script', 'code', 'shell', 'program', 'args', 'argv'] as const;

/** Whether a call runs a program that could read the workspace: `exec` tools, and MCP tools that take one. */
export function runsProgram(judged: JudgedCall): boolean {
  if (judged.tool.kind === 'exec') return true;
  if (judged.tool.kind !== 'mcp' || judged.tool.mcp?.readOnlyHint === true) return false;
  const args = judged.args;
  return isRecord(args) && PROGRAM_ARGS.some((key) => Object.hasOwn(args, key));
}

/** Whether a call can change the workspace's files: a write, a delete, a program, an MCP tool that is not read-only. */
export function changesFiles(judged: JudgedCall): boolean {
  const kind = judged.tool.kind;
  return (
    kind === 'write' ||
    kind === 'delete' ||
    kind === 'exec' ||
    (kind === 'mcp' && judged.tool.mcp?.readOnlyHint !== true)
  );
}

/**
 * The real workspace paths a call writes or deletes: those a writing tool (or an MCP tool that is not
 * read-only) names, inside the workspace.
 */
function pathsWrittenBy(judged: JudgedCall): string[] {
  const kind = judged.tool.kind;
  const writes = kind === 'write' || kind === 'delete' || (kind === 'mcp' && judged.tool.mcp?.readOnlyHint !== true);
  if (!writes) return [];
  return pathsOf(judged.args).filter((p) => p !== '' && p !== '.' && !p.startsWith('../') && !path.isAbsolute(p));
}

/** Whether a workspace path lies in another conversation's inbox folder than `conversationId`'s. */
function inOtherInbox(conversationId: string): (p: string) => boolean {
  const own = inboxFolderOf(conversationId);
  return (p) => {
    const [top, folder, ...rest] = p.split('/');
    return top === INBOX_DIR && folder !== own && rest.length > 0;
  };
}

/** The workspace a conversation's calls work in, as the taint names and scans it. */
async function workspaceFor(ctx: ApprovalContext, conversationId: string): Promise<TaintedWorkspace | undefined> {
  const root = ctx.gate.rootOf(conversationId);
  return (
    (await ctx.workspaceOf?.(conversationId)) ?? (root === undefined ? undefined : { key: DEPLOYMENT_WORKSPACE, root })
  );
}

/** Baselines read, per workspace key, kept until their stored version changes. */
const baselineCache = new Map<string, { version: string; entries: Map<string, string> }>();

/** The stored baseline, or the workspace's initial one (nothing, or its clean checkout) when none is stored. */
async function baselineOf(
  db: Queryable,
  workspace: TaintedWorkspace,
  now: WorkspaceState,
): Promise<{ entries: Map<string, string>; stored: boolean }> {
  const version = await baselineVersion(db, workspace.key);
  if (version === undefined) return { entries: await initialBaseline(workspace, now), stored: false };
  const cached = baselineCache.get(workspace.key);
  if (cached?.version === version) return { entries: cached.entries, stored: true };
  const read = await readBaseline(db, workspace.key);
  if (!read) return { entries: await initialBaseline(workspace, now), stored: false };
  const entries = new Map(Object.entries(read.entries));
  baselineCache.set(workspace.key, { version: read.version, entries });
  return { entries, stored: true };
}

/** A checked-out file's git mode → the scan's kind of entry. */
const KIND_OF_MODE: Record<string, string> = { '100644': 'f', '100755': 'x', '120000': 'l' };

/**
 * A workspace nobody vouched for yet: empty, or, for a worktree, its clean checkout — a file on disk
 * whose content and kind are the commit's keeps its entry, every other file of the commit gets an
 * entry no scan produces (so it shows as changed or deleted). The worktree's own `.git` pointer file
 * is git's, made with the checkout.
 */
async function initialBaseline(workspace: TaintedWorkspace, now: WorkspaceState): Promise<Map<string, string>> {
  if (!workspace.checkout) return new Map();
  const entries = new Map<string, string>();
  const gitPointer = now.entries.get('.git');
  if (gitPointer?.entry.startsWith('f:')) entries.set('.git', gitPointer.entry);
  for (const [p, { mode, blob }] of await workspace.checkout()) {
    const kind = KIND_OF_MODE[mode];
    // A submodule is a folder the checkout leaves empty: nothing of it is on disk to compare.
    if (kind === undefined) continue;
    const scanned = now.entries.get(p);
    const same = scanned !== undefined && scanned.gitBlob === blob && scanned.entry.startsWith(`${kind}:`);
    entries.set(p, same ? scanned.entry : 'checkout');
  }
  return entries;
}

/** What differs from the baseline: the paths a card names (newest first), and a digest of exactly that state. */
interface OnePersonContent {
  paths: string[];
  digest: string;
}

/** The workspace's one-person content now, or undefined when it is what a second person vouched for. */
async function onePersonContent(
  ctx: ApprovalContext,
  db: Queryable,
  conversationId: string,
): Promise<OnePersonContent | undefined> {
  const workspace = await workspaceFor(ctx, conversationId);
  // A gate that knows no workspace (a test's) has no files a program could read.
  if (!workspace) return undefined;
  const now = await scanWorkspace(workspace.root);
  const { entries: baseline } = await baselineOf(db, workspace, now);
  const changed: Array<{ path: string; entry: string; changedMs: number }> = [];
  for (const [p, scanned] of now.entries) if (baseline.get(p) !== scanned.entry) changed.push({ path: p, ...scanned });
  const deleted = [...baseline.keys()].filter((p) => !now.entries.has(p)).sort();
  if (changed.length === 0 && deleted.length === 0 && now.complete) return undefined;
  changed.sort((a, b) => b.changedMs - a.changedMs || a.path.localeCompare(b.path));
  const named = [
    ...changed.map((c) => c.path),
    ...deleted.map((p) => `${p} (deleted)`),
    ...(now.complete
      ? []
      : [
          '(part of the workspace was not scanned: more files or folders than a scan reads, or one the bot cannot list)',
        ]),
  ];
  const state = [
    workspace.key,
    now.complete ? 'complete' : 'incomplete',
    ...changed.map((c) => `${c.path}\0${c.entry}`).sort(),
    ...deleted.map((p) => `${p}\0-`),
  ].join('\n');
  return {
    paths: named,
    digest: createHash('sha256').update(state).digest('hex'),
  };
}

/**
 * The policy's decision on a call, with the workspace's one-person content when the call runs a
 * program. Every place that decides a call (the loop's ruling, the card, a click, the resume, a grant,
 * the repository's test command) asks here.
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
  // Without anyone who could countersign there is no taint rule: the scan would decide nothing.
  const changes =
    runsProgram(judged) && ctx.gate.hasApprovers() ? await onePersonContent(ctx, db, conversationId) : undefined;
  const decision = ctx.gate.decideJudged(judged, requester, reply, {
    ...(changes ? { changedFiles: changes.paths, changeDigest: changes.digest } : {}),
  });
  return { decision, judged };
}

/**
 * At resume: a countersignature vouches for exactly the state its card showed (the digest of the
 * changed paths and their content). Any other state now — a rewrite of a named file, a new file,
 * a deletion — means the approver did not see what the program would read; the call does not run.
 * Returns why, or undefined.
 */
export function unvouchedChanges(stored: CallPolicy | undefined, now: Decision): string | undefined {
  if (now.vouchesFor === undefined || stored?.vouchesFor === now.vouchesFor) return undefined;
  return `the workspace changed after the card was shown (${now.message ?? 'files changed'}), so the approval does not cover what the program would read.`;
}

/**
 * After an approved call ran: when someone other than its requester approved it, what it left is
 * vouched for. A program run makes the whole workspace as it left it the baseline; an approved write
 * adds the content now at the paths it names. A call only its requester approved changes nothing:
 * what it wrote stays one-person content.
 */
export async function vouchAfterApprovedCall(
  ctx: ApprovalContext,
  envelope: EnvelopeRow,
  call: Call & { id: string },
  decider: Requester,
): Promise<void> {
  if (mayBeSamePerson(decider, envelope.requester) || !ctx.gate.hasApprovers()) return;
  const judged = ctx.gate.judge(call, envelope.conversation_id);
  const workspace = await workspaceFor(ctx, envelope.conversation_id);
  if (!workspace) return;
  const now = await scanWorkspace(workspace.root);
  if (runsProgram(judged)) {
    // In the shared workspace the run saw only its own conversation's inbox (the sandbox hides the
    // rest, and the card may name their files past its 40): what other inboxes hold keeps the
    // baseline it had, so a file sent elsewhere stays one-person content for its own conversation.
    const unseen = workspace.key === DEPLOYMENT_WORKSPACE ? inOtherInbox(envelope.conversation_id) : () => false;
    const before = [...now.entries.keys()].some(unseen)
      ? (await baselineOf(ctx.pool, workspace, now)).entries
      : new Map<string, string>();
    const entries: Record<string, string> = {};
    for (const [p, { entry }] of now.entries) if (!unseen(p)) entries[p] = entry;
    for (const [p, entry] of before) if (unseen(p)) entries[p] = entry;
    await replaceBaseline(ctx.pool, workspace.key, entries, `countersigned run ${envelope.id}/${call.id}`);
    ctx.log.info(
      { envelopeId: envelope.id, files: now.entries.size },
      'a countersigned run set the workspace baseline',
    );
    return;
  }
  const written = pathsWrittenBy(judged);
  if (written.length === 0) return;
  const { entries: baseline, stored } = await baselineOf(ctx.pool, workspace, now);
  const set: Record<string, string> = {};
  const removed: string[] = [];
  for (const target of written) {
    const under = (p: string) => p === target || p.startsWith(`${target}/`);
    for (const [p, { entry }] of now.entries) if (under(p)) set[p] = entry;
    for (const p of baseline.keys()) if (under(p) && !now.entries.has(p)) removed.push(p);
  }
  const initial = stored ? {} : Object.fromEntries(baseline);
  await amendBaseline(ctx.pool, workspace.key, { set, removed, initial }, `approved write ${envelope.id}/${call.id}`);
}
