import path from 'node:path';
import type { Skill } from './load.ts';
import type { SkillProblem } from './problem.ts';
import type { SkillRegistry, SkillSummary } from './registry.ts';
import { closestName } from './suggest.ts';

type SkillLookup = Pick<SkillRegistry, 'list' | 'get'>;

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

/**
 * The skills that were skipped, one line each: the folder and the first reason, from the skill
 * file's line. Paths stay out (a chat channel need not see the server's layout); `skills lint`
 * gives the full report.
 */
function skippedLines(problems: readonly SkillProblem[]): string[] {
  const firstError = new Map<string, SkillProblem>();
  for (const problem of problems) {
    if (problem.severity === 'error' && !firstError.has(problem.file)) firstError.set(problem.file, problem);
  }
  return [...firstError.values()].map(
    (p) => `• ${path.basename(path.dirname(p.file))} (line ${p.line}): ${oneLine(p.message)}`,
  );
}

/** The reply to a "list skills" command, the same text on every platform. */
export function formatSkillList(
  registry: Pick<SkillRegistry, 'list'> & Partial<Pick<SkillRegistry, 'problems'>>,
): string {
  const skills = registry.list();
  const skipped = skippedLines(registry.problems?.() ?? []);
  const skippedPart = skipped.length
    ? ['', `${skipped.length} skill${skipped.length === 1 ? ' was' : 's were'} skipped:`, ...skipped]
    : [];
  if (skills.length === 0) {
    return [
      'No skills are installed. Add one to the custom skills folder (countersign skills new NAME scaffolds it).',
      ...skippedPart,
    ].join('\n');
  }
  const lines = skills.map((s) => `• ${s.name}${s.source === 'custom' ? ' (custom)' : ''}: ${oneLine(s.description)}`);
  return [`${skills.length} skill${skills.length === 1 ? '' : 's'} available:`, ...lines, ...skippedPart].join('\n');
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
