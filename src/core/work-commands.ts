import type { CommandCall, WorkItem } from './work-item.ts';

/**
 * The commands that start work other than a chat turn: `/code REPO TASK`, `/review REPO BRANCH`,
 * `/research TOPIC` (docs/code-work.md), `/schedule WHEN TASK` (docs/schedules.md). Every platform
 * offers them under these names; the core reads the text (src/repos/work-commands.ts,
 * src/schedules/command.ts), so adapters only post the header and admit the draft.
 */
export const WORK_COMMANDS = ['code', 'review', 'research', 'schedule'] as const;
export type WorkCommandName = (typeof WORK_COMMANDS)[number];

/** What a platform shows as each command's usage (its own syntax around it is the adapter's). */
export const WORK_COMMAND_USAGE: Record<WorkCommandName, { args: string; description: string }> = {
  code: { args: 'REPO TASK', description: 'change a repository in a worktree of its own; a change card asks to merge' },
  review: { args: 'REPO BRANCH', description: 'review a branch against its base, with file:line references' },
  research: { args: 'TOPIC', description: 'research in the background; the answer is posted in the thread' },
  schedule: {
    args: 'WHEN TASK',
    description: 'run a task later or repeatedly (every 15m, in 2h, cron and zone); a card asks first',
  },
};

/** A command read: the work it starts, or what to tell the person who ran it (only them). */
export type WorkCommandResult =
  | {
      ok: true;
      /** The message the adapter posts first; its thread is the work's conversation. */
      header: string;
      type: WorkItem['type'];
      priority: WorkItem['priority'];
      prompt: string;
      payload: Record<string, unknown>;
      /** The call the turn makes instead of asking the model (`/schedule`'s `schedule_task`). */
      call?: CommandCall;
    }
  | { ok: false; message: string };
