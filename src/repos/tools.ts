import { z } from 'zod';
import type { Requester } from '../core/person.ts';
import { defineBuiltinTool, type AnyBuiltinTool, type ToolContext, type ToolOutput } from '../agent/tools/tool.ts';
import { branchTip, changedFiles, type ChangedFile } from './changes.ts';
import type { CodeWorkspaces } from './code-workspaces.ts';
import { git } from './git.ts';
import type { RepoConfig } from './repos-config.ts';
import { shortConversationId } from './worktrees.ts';

/** The branch a conversation's change lives on. */
const branchOf = (conversationId: string) => `countersign/${shortConversationId(conversationId)}`;
import { mergeExactly, pushBase } from './merge.ts';

/**
 * The tools of code work (docs/code-work.md): `use_repository`, which the model calls when a person
 * asks in plain words to change a repository, and `merge_change`, which the bot itself proposes on
 * a change card (hidden from the model): approving it merges, denying it discards.
 */

export const USE_REPOSITORY = 'use_repository';
export const MERGE_CHANGE = 'merge_change';

/** What happened to a change, for the audit log (approval_audit). */
type CodeEvent = 'code_committed' | 'merge_requested' | 'merged' | 'merge_conflict' | 'discarded';

/** Writes one audit entry of code work. */
export type RecordCodeEvent = (event: CodeEvent, detail: Record<string, unknown>, actor?: Requester) => Promise<void>;

const UseRepositoryArgs = z.object({
  repo: z.string().min(1).max(40).describe('The repository, by the name the deployment gives it'),
});

/** A branch name as a card shows it: nothing a person could misread as more than a name. */
const BranchName = z.string().regex(/^[A-Za-z0-9._/-]{1,200}$/, 'expected a branch name');

const CommitId = z.string().regex(/^[0-9a-f]{40}$/, 'expected a full commit id');

/** How many files outside the commit a card names before it counts the rest. */
const NOT_COMMITTED_SHOWN = 50;

/** The files outside the commit as a card's call holds them: the first ones by name, then a count. */
export function notCommittedLines(files: readonly string[]): string[] {
  const shown = files.slice(0, NOT_COMMITTED_SHOWN).map((f) => f.slice(0, 1000));
  return files.length > NOT_COMMITTED_SHOWN ? [...shown, `… and ${files.length - NOT_COMMITTED_SHOWN} more`] : shown;
}

/** A change card's call: exactly this commit of this branch into the repository's base. */
export const MergeChangeArgs = z.object({
  repo: z.string().min(1).max(40),
  branch: BranchName,
  /** The branch it lands on, as the card names it: a base configured differently since refuses. */
  base: BranchName,
  sha: CommitId,
  /** Where the branch left the base when the card was made: the change is `from..sha`, also after a merge. */
  from: CommitId,
  /** The repository's test command and its result, as the card showed them. */
  tests: z.string().max(4000).optional(),
  /**
   * The worktree's files the commit does not hold (untracked, ignored such as received files,
   * uncommitted), as the card names them: a program run there could read them, a merge leaves them.
   */
  notCommitted: z
    .array(z.string().max(1000))
    .max(NOT_COMMITTED_SHOWN + 1)
    .default([]),
  /**
   * Everyone whose turn or approval put content into the change (`platform:user`), as recorded when
   * the content was written (src/repos/change-authors.ts): none of them may give its second signature.
   */
  authors: z
    .array(
      z
        .string()
        .regex(/^[^:]+:./s)
        .max(300),
    )
    .max(100)
    .default([]),
});
export type MergeChangeArgs = z.infer<typeof MergeChangeArgs>;

export function createCodeTools(workspaces: CodeWorkspaces, record: RecordCodeEvent): AnyBuiltinTool[] {
  return [useRepositoryTool(workspaces), mergeChangeTool(workspaces, record)];
}

function useRepositoryTool(workspaces: CodeWorkspaces) {
  return defineBuiltinTool({
    name: USE_REPOSITORY,
    kind: 'read',
    description:
      "Starts working on one of the repositories this deployment names, when a person asks you to change its code: from the next call on, every workspace tool and run_command work in this conversation's own git worktree of it (a branch of its own). When your turn ends, your changes are committed and a change card asks a person to merge them.",
    version: '1',
    input: UseRepositoryArgs,
    approval: 'never',
    risk: 'low',
    idempotent: true,
    async execute({ repo }, ctx): Promise<ToolOutput | string> {
      const bound = await workspaces.bind(ctx.conversationId, { repo, mode: 'code' });
      if (!bound.ok) return { content: bound.reason, isError: true };
      const now = await workspaces.current(ctx.conversationId);
      const where = now ? ` on branch ${now.worktree.branch}` : '';
      return `Working on ${repo}${where}. The workspace tools now read and write its worktree.`;
    },
  });
}

function mergeChangeTool(workspaces: CodeWorkspaces, record: RecordCodeEvent) {
  return defineBuiltinTool({
    name: MERGE_CHANGE,
    kind: 'merge',
    hidden: true,
    description: "Merges the commit a change card shows into the repository's base branch.",
    version: '1',
    input: MergeChangeArgs,
    approval: 'always',
    risk: 'high',
    // Safe to run again: a merge that already happened is found in the base and reported as done.
    idempotent: true,
    describeForApproval: (raw, ctx) => describeChange(workspaces, raw, ctx.conversationId),
    execute: (args, ctx) => merge(workspaces, record, args, ctx),
    onDenied: (raw, ctx) => discard(workspaces, record, raw, ctx),
    onExpired: (raw, ctx) => discardExpired(workspaces, record, raw, ctx),
    coRequesters: (args) => args.authors,
  });
}

/**
 * The repository of a card's change, when the call names this conversation's own change: its
 * repository, its own branch (`countersign/<short id>`, whether or not the worktree still exists — a
 * retried merge runs after the worktree went), and a `from` the change grew out of. The bot makes
 * these calls itself (the model cannot call a hidden tool); this is the check that keeps it so.
 */
export async function changeOf(
  workspaces: CodeWorkspaces,
  args: Pick<MergeChangeArgs, 'repo' | 'branch' | 'sha' | 'from'>,
  conversationId: string,
): Promise<RepoConfig | undefined> {
  const binding = workspaces.bindingOf(conversationId);
  if (!binding || binding.mode !== 'code' || binding.repo !== args.repo) return undefined;
  if (args.branch !== branchOf(conversationId)) return undefined;
  const found = workspaces.catalog.get(args.repo);
  if (!found.ok) return undefined;
  const descends = await git(found.repo.path, ['merge-base', '--is-ancestor', args.from, args.sha]).then(
    () => true,
    () => false,
  );
  return descends ? found.repo : undefined;
}

async function merge(
  workspaces: CodeWorkspaces,
  record: RecordCodeEvent,
  args: MergeChangeArgs,
  ctx: ToolContext,
): Promise<ToolOutput | string> {
  const repo = await changeOf(workspaces, args, ctx.conversationId);
  if (!repo) return { content: `This conversation has no change of ${args.repo} to merge.`, isError: true };
  const base = await workspaces.worktrees.base(repo);
  const short = args.sha.slice(0, 12);
  if (base !== args.base)
    return {
      content: `Not merged: the card named ${args.base} as the base, but ${repo.name} now lands on ${base}.`,
      isError: true,
    };
  const result = await mergeExactly(repo.path, base, {
    branch: args.branch,
    sha: args.sha,
    message: `Merge ${args.branch} (${short}) into ${base}\n\nApproved on a Countersign change card.`,
  });
  const detail = { repo: repo.name, branch: args.branch, sha: args.sha, base };
  switch (result.outcome) {
    case 'conflict':
      await record('merge_conflict', { ...detail, files: result.files });
      return {
        content: `Not merged: ${short} conflicts with ${base} in ${result.files.join(', ')}. Nothing in ${base} changed; the change is still on ${args.branch}.`,
        isError: true,
      };
    case 'moved':
      return {
        content: `Not merged: ${args.branch} moved since the card (it is now at ${result.tip?.slice(0, 12) ?? 'nothing'}), so the approval of ${short} does not cover it. A new card will show the new commit.`,
        isError: true,
      };
    case 'dirty':
      return {
        content: `Not merged: the clone of ${repo.name} has uncommitted changes to ${result.files.slice(0, 10).join(', ')} on ${base}. Nothing changed.`,
        isError: true,
      };
    case 'merged':
    case 'already-merged': {
      await record('merged', { ...detail, commit: result.commit });
      await workspaces.removeWorktree(ctx.conversationId);
      const how = result.outcome === 'merged' && result.fastForward ? ' (fast-forward)' : '';
      const pushed = repo.push ? await pushReport(repo.path, repo.push, base) : '';
      return `Merged ${short} into ${base}${how}: ${base} is now at ${result.commit.slice(0, 12)}.${pushed} The worktree and ${args.branch} were removed.`;
    }
  }
}

async function pushReport(repoPath: string, remote: string, base: string): Promise<string> {
  const push = await pushBase(repoPath, remote, base);
  return push.ok
    ? ` Pushed ${base} to ${remote}.`
    : ` Pushing ${base} to ${remote} failed (the merge stays): ${push.error}`;
}

async function discard(
  workspaces: CodeWorkspaces,
  record: RecordCodeEvent,
  raw: unknown,
  ctx: ToolContext,
): Promise<string | undefined> {
  const args = MergeChangeArgs.safeParse(raw);
  if (!args.success) return undefined;
  const repo = await changeOf(workspaces, args.data, ctx.conversationId);
  if (!repo) return undefined;
  await workspaces.removeWorktree(ctx.conversationId);
  await record('discarded', { repo: repo.name, branch: args.data.branch, sha: args.data.sha }, ctx.requester);
  return `The change was discarded: its worktree and ${args.data.branch} were removed, and nothing in the base branch changed.`;
}

/**
 * A change card that expired undecided: its worktree and branch go (an abandoned change would hold
 * a place toward REPO_WORKTREES_MAX), unless the branch moved past the card's commit since — then
 * newer work is on it, and it stays for that work's own card.
 */
async function discardExpired(
  workspaces: CodeWorkspaces,
  record: RecordCodeEvent,
  raw: unknown,
  ctx: ToolContext,
): Promise<void> {
  const args = MergeChangeArgs.safeParse(raw);
  if (!args.success) return;
  const repo = await changeOf(workspaces, args.data, ctx.conversationId);
  if (!repo) return;
  const tip = await branchTip(repo.path, args.data.branch);
  if (tip !== args.data.sha) return;
  await workspaces.removeWorktree(ctx.conversationId);
  await record('discarded', { repo: repo.name, branch: args.data.branch, sha: args.data.sha, why: 'the card expired' });
  ctx.log.info({ repo: repo.name, branch: args.data.branch }, 'removed the worktree of an expired change card');
}

/** How many changed files a card lists before it counts the rest. */
const FILES_SHOWN = 30;

/** The card's account of a change: what merges where, and every file with its counts and modes. */
async function describeChange(
  workspaces: CodeWorkspaces,
  raw: unknown,
  conversationId: string,
): Promise<string | undefined> {
  const parsed = MergeChangeArgs.safeParse(raw);
  if (!parsed.success) return undefined;
  const args = parsed.data;
  const repo = await changeOf(workspaces, args, conversationId);
  if (!repo) return 'This is not a change of this conversation: it cannot be merged.';
  const base = args.base;
  const files = await changedFiles(repo.path, args.from, args.sha);
  const plus = files.reduce((n, f) => n + (f.added ?? 0), 0);
  const minus = files.reduce((n, f) => n + (f.removed ?? 0), 0);
  const lines = [
    `Merge ${args.branch} @ ${args.sha.slice(0, 12)} into ${base} of ${args.repo}`,
    `${files.length} file${files.length === 1 ? '' : 's'} changed, +${plus} −${minus}`,
    ...files.slice(0, FILES_SHOWN).map(describeFile),
    ...(files.length > FILES_SHOWN ? [`… and ${files.length - FILES_SHOWN} more (Full diff)`] : []),
    ...(args.tests ? [`Tests: ${args.tests}`] : []),
    ...(args.notCommitted.length
      ? [`In the worktree but not in this commit (not merged): ${args.notCommitted.join(', ')}`]
      : []),
  ];
  return lines.join('\n');
}

/** One changed file as a card line: counts, then what a reviewer must not miss. */
function describeFile(file: ChangedFile): string {
  const counts = file.binary ? 'binary' : `+${file.added ?? 0} −${file.removed ?? 0}`;
  const notes = [
    file.status === 'added' ? 'new' : undefined,
    file.status === 'deleted' ? 'deleted' : undefined,
    file.oldPath ? `renamed from ${file.oldPath}` : undefined,
    file.symlink ? 'symlink' : undefined,
    file.executable ? 'executable' : undefined,
    file.modeChanged ? `mode ${file.oldMode} → ${file.mode}` : undefined,
  ].filter(Boolean);
  return `${counts}  ${file.path}${notes.length ? ` (${notes.join(', ')})` : ''}`;
}
