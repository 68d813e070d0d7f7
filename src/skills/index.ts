export { skillsCommand } from './cli.ts';
export { formatSkillList, skillRunPrompt } from './commands.ts';
export { skillDirs } from './dirs.ts';
export { skillsPromptSection } from './prompt.ts';
export { openSkillRegistry, SkillRegistry } from './registry.ts';
export { createSkillTools, SKILL_TOOL_NAMES } from './tools.ts';
