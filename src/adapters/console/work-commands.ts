import type { AdapterContext } from '../platform.ts';
import { WORK_COMMANDS, type WorkCommandName } from '../../core/work-commands.ts';
import type { ConsoleCommand } from './inbound.ts';
import { skillConsoleCommands } from './skill-commands.ts';

/** `/code REPO TASK`, `/review REPO BRANCH`, `/research TOPIC`: the command and the rest of the line. */
const WORK_LINE = new RegExp(`^/(${WORK_COMMANDS.join('|')})(?:\\s+([\\s\\S]*))?$`);

/**
 * The work commands and `/status`. A work command becomes the line's work item (its type, priority
 * and prompt), in the console's own conversation: a terminal has no threads, so there is no header
 * to post, as for `/skill`. What the core cannot read is printed, and nothing is enqueued.
 */
function workConsoleCommands(ctx: Pick<AdapterContext, 'workCommand' | 'workStatus'>): ConsoleCommand {
  return async (line, person) => {
    if (line === '/status') return { reply: await ctx.workStatus(person) };
    const typed = WORK_LINE.exec(line);
    if (!typed) return undefined;
    // The core reads the words, and answers a command typed without them with its usage.
    const work = ctx.workCommand(typed[1] as WorkCommandName, (typed[2] ?? '').trim());
    if (!work.ok) return { reply: work.message };
    return {
      draft: { type: work.type, priority: work.priority, input: { prompt: work.prompt }, payload: work.payload },
    };
  };
}

/** Every line the console answers itself: the skills' commands, then the work commands. */
export function consoleCommands(ctx: Pick<AdapterContext, 'skills' | 'workCommand' | 'workStatus'>): ConsoleCommand {
  const handlers = [skillConsoleCommands(ctx.skills), workConsoleCommands(ctx)];
  return async (line, person) => {
    for (const handle of handlers) {
      const answer = await handle(line, person);
      if (answer) return answer;
    }
    return undefined;
  };
}
