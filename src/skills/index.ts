export { skillsCommand, type CommandIO } from './cli.ts';
export { formatSkillList, skillRunPrompt, type SkillRun } from './commands.ts';
export { skillDirs, type SkillDirs } from './dirs.ts';
export { LIMITS as SKILL_LIMITS } from './limits.ts';
export { SKILL_FILE, type Skill, type SkillSource } from './load.ts';
export { formatProblem, type SkillProblem } from './problem.ts';
export { skillsPromptSection } from './prompt.ts';
export {
  openSkillRegistry,
  SkillRegistry,
  type SkillRegistryOptions,
  type SkillsChange,
  type SkillSummary,
} from './registry.ts';
export { createSkillTools, SKILL_TOOL_NAMES } from './tools.ts';
