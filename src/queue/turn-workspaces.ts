import type { Logger } from 'pino';
import type { ToolCall } from '../agent/messages.ts';
import type { ModelSpend } from '../agent/model-spend.ts';
import type { AnyTool } from '../agent/tools/tool.ts';
import type { Requester } from '../core/person.ts';
import type { WorkItem } from '../core/work-item.ts';

/**
 * Where a turn works when its conversation works on a repository (src/repos, docs/code-work.md):
 * the queue asks before the turn and after its final answer; src/repos answers. Without repositories
 * configured there is none, and every turn works in the deployment's workspace.
 */
export interface TurnWorkspaces {
  /** Before the turn: binds and opens the conversation's worktree when it works on a repository. */
  prepare(item: WorkItem, log: Logger): Promise<PreparedWorkspace>;
  /**
   * After a final answer: commits what the turn changed (`summary`: the answer, for the commit
   * message) and returns the call a change card asks to merge, when the branch holds commits the
   * base does not. `tests`: the repository's test command run under the policy, or why it was not.
   */
  changeToPropose(
    item: WorkItem,
    summary: string,
    tests: (argv: string[]) => Promise<string>,
    log: Logger,
  ): Promise<ToolCall | undefined>;
  /**
   * After something that may have written the worktree — a tool call that is not read-only, a turn
   * that parked, stopped or failed — records who is behind what changed since the last record: the
   * requester, and `approvedBy` when a person's click (or grant) let the call run (who may
   * countersign a merge). `ranProgram`: the call ran a program, which may write after it returns, so
   * its people stand behind the whole change.
   */
  recordWrites(item: WorkItem, log: Logger, how?: WritesBy): Promise<void>;
}

/** Who let a call that may have written run, and whether it ran a program. */
export interface WritesBy {
  approvedBy?: Requester;
  ranProgram?: boolean;
}

/** A turn's workspace, as `prepare` found it. */
export type PreparedWorkspace =
  /** The deployment's workspace: nothing changes. */
  | { kind: 'none' }
  /** The work cannot start (an unknown repository, the worktree limit): told to the person. */
  | { kind: 'refused'; text: string }
  | {
      kind: 'repository';
      /** What the model is told about where it works (added to the system prompt). */
      systemNote: string;
      /** The tools this turn is offered; absent: all of them. A review gets no tool that writes. */
      offers?: (tool: AnyTool) => boolean;
      /** Set when an external coding CLI does this turn's work instead of the loop. */
      external?: ExternalRun;
    };

/**
 * An external coding agent's run in the worktree: progress as it comes, the summary at the end.
 * `spend`: the turn's spend limits, when budgets apply; the run is held against them before it
 * starts, and `refused` (the budget's message) when one has no room: the agent never started.
 */
export type ExternalRun = (
  onProgress: (markdown: string) => void,
  signal: AbortSignal,
  spend: ModelSpend | undefined,
) => Promise<{ text: string; failed: boolean } | { refused: string }>;
