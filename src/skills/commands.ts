import type { Skill } from './load.ts';
import type { SkillRegistry, SkillSummary } from './registry.ts';
import { closestName } from './suggest.ts';

type SkillLookup = Pick<SkillRegistry, 'list' | 'get'>;

/** The reply to a "list skills" command, the same text on every platform. */
export function formatSkillList(registry: Pick<SkillRegistry, 'list'>): string {
  const skills = registry.list();
  if (skills.length === 0) {
    return 'No skills are installed. Add one to the custom skills folder (countersign skills new NAME scaffolds it).';
  }
  const lines = skills.map(
    (s) => `• ${s.name}${s.source === 'custom' ? ' (custom)' : ''}: ${s.description.replace(/\s+/g, ' ').trim()}`,
  );
  return [`${skills.length} skill${skills.length === 1 ? '' : 's'} available:`, ...lines].join('\n');
}

export interface SkillRun {
  skill: SkillSummary;
  /** The user message for a turn that starts with the skill already loaded. */
  prompt: string;
}

/**
 * Builds the turn for "run skill NAME with INPUT". The skill's instructions go into the message
 * itself, so the model has them at once instead of spending a round on load_skill. Returns the
 * text to show the user when there is no such skill.
 */
export function skillRunPrompt(registry: SkillLookup, name: string, input: string): string | SkillRun {
  const wanted = name.trim().replace(/^\//, '').toLowerCase();
  const skill = registry.get(wanted);
  if (!skill) return unknownSkillText(registry, name.trim());
  const request = input.trim();
  const prompt = [
    `Use the skill "${skill.name}" for this request. Its instructions are below, already loaded: follow them and do not call load_skill for it.${skill.files.length ? ' Fetch the files it mentions with read_skill_file.' : ''}`,
    '',
    `<skill name="${skill.name}">`,
    skill.body,
    '</skill>',
    '',
    request
      ? `Request:\n${request}`
      : 'No further input was given: start the skill, and ask for anything it needs that the conversation does not already say.',
  ].join('\n');
  return { skill: summaryOf(skill), prompt };
}

function unknownSkillText(registry: SkillLookup, typed: string): string {
  const names = registry.list().map((s) => s.name);
  if (!typed) return `Say which skill to run. Available: ${names.length ? names.join(', ') : '(none installed)'}.`;
  const guess = closestName(typed, names);
  const hint = guess ? ` Did you mean "${guess}"?` : '';
  return `There is no skill named "${typed}".${hint} Available: ${names.length ? names.join(', ') : '(none installed)'}.`;
}

const summaryOf = ({ name, description, source, dir }: Skill): SkillSummary => ({ name, description, source, dir });
