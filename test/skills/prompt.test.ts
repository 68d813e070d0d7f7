import { describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/skills/limits.ts';
import { skillsPromptSection } from '../../src/skills/prompt.ts';
import type { SkillSummary } from '../../src/skills/registry.ts';

const summary = (name: string, description: string): SkillSummary => ({
  name,
  description,
  source: 'shipped',
  dir: `/skills/${name}`,
});
const registryOf = (skills: SkillSummary[]) => ({ list: () => skills });
const many = (count: number, descriptionChars: number) =>
  Array.from({ length: count }, (_, i) =>
    summary(`skill-${String(i).padStart(3, '0')}`, `Handles case ${i}. `.padEnd(descriptionChars, 'x')),
  );

describe('skillsPromptSection', () => {
  it('lists each skill by name and description, and tells the model to load_skill first', () => {
    const section = skillsPromptSection(
      registryOf([summary('runbook', 'Walks a runbook.'), summary('incident-report', 'Writes an incident report.')]),
      4000,
    );
    expect(section).toContain('load_skill');
    expect(section.split('\n').filter((l) => l.startsWith('- '))).toEqual([
      '- runbook: Walks a runbook.',
      '- incident-report: Writes an incident report.',
    ]);
  });

  it('never includes a skill body, only the catalog', () => {
    const section = skillsPromptSection(registryOf([summary('runbook', 'Walks a runbook.')]), 4000);
    expect(section).not.toContain('/skills/runbook');
  });

  it('is empty when there are no skills', () => {
    expect(skillsPromptSection(registryOf([]), 4000)).toBe('');
  });

  it('puts a multi-line description on one line', () => {
    const section = skillsPromptSection(registryOf([summary('a', 'First line.\n  Second   line.')]), 4000);
    expect(section).toContain('- a: First line. Second line.');
  });

  it('shortens descriptions before leaving any skill out', () => {
    const skills = many(10, 300);
    const full = skillsPromptSection(registryOf(skills), 100_000);
    const budget = Math.floor(full.length * 0.6);
    const section = skillsPromptSection(registryOf(skills), budget);
    expect(section.length).toBeLessThanOrEqual(budget);
    for (const s of skills) expect(section).toContain(`- ${s.name}: `);
    expect(section).toContain('…');
    expect(section).not.toContain('more skill');
  });

  it('leaves skills out with a note pointing to list_skills when shortening is not enough', () => {
    const skills = many(200, 300);
    const section = skillsPromptSection(registryOf(skills), 3000);
    expect(section.length).toBeLessThanOrEqual(3000);
    const shown = section.split('\n').filter((l) => l.startsWith('- ')).length;
    expect(shown).toBeGreaterThan(0);
    expect(shown).toBeLessThan(200);
    expect(section.endsWith(`(${200 - shown} more skills: use list_skills to see them.)`)).toBe(true);
    for (const line of section.split('\n').filter((l) => l.startsWith('- '))) {
      expect(line.length).toBeLessThanOrEqual(`- skill-000: `.length + LIMITS.promptDescriptionMinChars);
    }
  });

  it.each([200, 500, 1000, 2500, 8000, 30_000])('stays within a budget of %i characters', (budget) => {
    const section = skillsPromptSection(registryOf(many(120, 700)), budget);
    expect(section.length).toBeLessThanOrEqual(budget);
  });

  it('returns nothing rather than a header alone when the budget cannot hold one skill or the note', () => {
    expect(skillsPromptSection(registryOf(many(3, 100)), 40)).toBe('');
  });
});
