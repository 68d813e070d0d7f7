import { LIMITS } from './limits.ts';
import type { SkillRegistry, SkillSummary } from './registry.ts';

const HEADER = [
  '## Skills',
  'Skills are packaged instructions for specific tasks. When a request matches a skill below, call load_skill with its name before you start and follow what it says; use read_skill_file for files it refers to.',
].join('\n');

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

function shorten(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, Math.max(0, max - 1)).trimEnd()}…`;
}

const entry = (skill: SkillSummary, descriptionChars: number) =>
  `- ${skill.name}: ${shorten(oneLine(skill.description), descriptionChars)}`;

const omittedNote = (count: number) =>
  `(${count} more skill${count === 1 ? '' : 's'}: use list_skills to see ${count === 1 ? 'it' : 'them'}.)`;

/**
 * The system-prompt section that tells the model which skills exist: names and descriptions only
 * (instructions load on demand), never longer than `budgetChars`. When the budget is tight the
 * descriptions are cut first, down to a floor; past that, skills are left out with a note.
 * Returns '' when there are no skills, so the prompt carries no empty catalog.
 */
export function skillsPromptSection(registry: Pick<SkillRegistry, 'list'>, budgetChars: number): string {
  const skills = registry.list();
  if (skills.length === 0) return '';
  const render = (shown: readonly SkillSummary[], descriptionChars: number) => {
    const lines = [HEADER, ...shown.map((s) => entry(s, descriptionChars))];
    if (shown.length < skills.length) lines.push(omittedNote(skills.length - shown.length));
    return lines.join('\n');
  };

  const longest = Math.max(...skills.map((s) => oneLine(s.description).length));
  const full = render(skills, longest);
  if (full.length <= budgetChars) return full;

  // The widest description cap that fits, found by bisection over [floor, longest].
  const floor = Math.min(LIMITS.promptDescriptionMinChars, longest);
  if (render(skills, floor).length <= budgetChars) {
    let low = floor;
    let high = longest;
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (render(skills, mid).length <= budgetChars) low = mid;
      else high = mid - 1;
    }
    return render(skills, low);
  }

  // Even at the floor everything does not fit: show as many skills as fit, with the note.
  let shown = skills.length - 1;
  while (shown > 0 && render(skills.slice(0, shown), floor).length > budgetChars) shown--;
  const result = render(skills.slice(0, shown), floor);
  if (result.length <= budgetChars) return result;
  return '';
}
