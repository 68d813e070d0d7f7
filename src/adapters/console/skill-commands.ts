import { formatSkillList, skillRunPrompt, type SkillRegistry } from '../../skills/index.ts';
import type { ConsoleCommand } from './inbound.ts';

/** `/skills` lists skills; `/skill NAME INPUT` starts a turn with that skill loaded. */
export function skillConsoleCommands(registry: SkillRegistry): ConsoleCommand {
  return async (line) => {
    if (line === '/skills') return { reply: formatSkillList(registry) };
    const run = /^\/skill(?:\s+(\S+))?(?:\s+([\s\S]*))?$/.exec(line);
    if (!run) return undefined;
    const result = skillRunPrompt(registry, run[1] ?? '', run[2] ?? '');
    if (typeof result === 'string') return { reply: result };
    return { draft: { input: { prompt: result.prompt, skill: result.skill.name } } };
  };
}
