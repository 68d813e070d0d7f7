import { describe, expect, it } from 'vitest';
import { formatSkillList, skillRunPrompt } from '../../src/skills/commands.ts';
import type { Skill } from '../../src/skills/load.ts';
import type { SkillProblem } from '../../src/skills/problem.ts';

const skill = (name: string, description: string, extra: Partial<Skill> = {}): Skill => ({
  name,
  description,
  metadata: {},
  allowedTools: [],
  source: 'shipped',
  dir: `/skills/${name}`,
  file: `/skills/${name}/SKILL.md`,
  body: `Instructions for ${name}.`,
  files: [],
  contentHash: 'h',
  ...extra,
});

function registryOf(skills: Skill[]) {
  const byName = new Map(skills.map((s) => [s.name, s]));
  return {
    list: () => skills.map(({ name, description, source, dir }) => ({ name, description, source, dir })),
    get: (name: string) => byName.get(name),
  };
}

const registry = registryOf([
  skill('incident-report', 'Writes an incident report.', { files: ['references/report-template.md'] }),
  skill('runbook', 'Walks a runbook\nstep by step.', { source: 'custom' }),
]);

describe('formatSkillList', () => {
  it('names each skipped skill and why, one line each, after the ones available', () => {
    const problems: SkillProblem[] = [
      { severity: 'error', file: '/skills/broken/SKILL.md', line: 3, message: 'invalid YAML: bad\nindentation' },
      { severity: 'error', file: '/skills/broken/SKILL.md', line: 5, message: 'a second reason' },
      { severity: 'warning', file: '/skills/runbook/SKILL.md', line: 4, message: 'unknown key "tags"' },
      { severity: 'error', file: '/custom/x/SKILL.md', line: 1, message: 'SKILL.md is empty' },
    ];
    expect(formatSkillList({ ...registry, problems: () => problems })).toBe(
      [
        '2 skills available:',
        '• incident-report: Writes an incident report.',
        '• runbook (custom): Walks a runbook step by step.',
        '',
        '2 skills were skipped:',
        '• broken (line 3): invalid YAML: bad indentation',
        '• x (line 1): SKILL.md is empty',
      ].join('\n'),
    );
  });

  it('mentions a skipped skill even when none loaded', () => {
    const problems: SkillProblem[] = [{ severity: 'error', file: '/s/a/SKILL.md', line: 2, message: 'missing name' }];
    expect(formatSkillList({ ...registryOf([]), problems: () => problems })).toMatch(
      /^No skills are installed\..*\n\n1 skill was skipped:\n• a \(line 2\): missing name$/,
    );
  });

  it('lists every skill with its description on one line, marking custom ones', () => {
    expect(formatSkillList(registry)).toBe(
      '2 skills available:\n• incident-report: Writes an incident report.\n• runbook (custom): Walks a runbook step by step.',
    );
  });

  it('says how to add a skill when there are none', () => {
    expect(formatSkillList(registryOf([]))).toBe(
      'No skills are installed. Add one to the custom skills folder (countersign skills new NAME scaffolds it).',
    );
  });
});

describe('skillRunPrompt', () => {
  it('builds a prompt that carries the skill instructions and the request', () => {
    const run = skillRunPrompt(registry, 'incident-report', '  checkout outage this morning ');
    expect(typeof run).toBe('object');
    if (typeof run === 'string') return;
    expect(run.skill).toEqual({
      name: 'incident-report',
      description: 'Writes an incident report.',
      source: 'shipped',
      dir: '/skills/incident-report',
    });
    expect(run.prompt).toBe(
      [
        'Use the skill "incident-report" for this request. Its instructions are below, already loaded: follow them and do not call load_skill for it. Fetch the files it mentions with read_skill_file.',
        '',
        '<skill name="incident-report">',
        'Instructions for incident-report.',
        '</skill>',
        '',
        'Request:',
        'checkout outage this morning',
      ].join('\n'),
    );
  });

  it('accepts the name in any case and with a leading slash', () => {
    const run = skillRunPrompt(registry, '/Runbook', 'db failover');
    expect(typeof run === 'object' && run.skill.name).toBe('runbook');
  });

  it('asks the model to gather what it needs when there is no input', () => {
    const run = skillRunPrompt(registry, 'runbook', '   ');
    expect(
      typeof run === 'object' &&
        run.prompt.endsWith('ask for anything it needs that the conversation does not already say.'),
    ).toBe(true);
  });

  it('suggests the closest skill for a typo', () => {
    expect(skillRunPrompt(registry, 'incdent-report', 'x')).toBe(
      'There is no skill named "incdent-report". Did you mean "incident-report"? Available: incident-report, runbook.',
    );
  });

  it('lists the skills when the name is nothing like any of them', () => {
    expect(skillRunPrompt(registry, 'kubernetes', 'x')).toBe(
      'There is no skill named "kubernetes". Available: incident-report, runbook.',
    );
  });

  it('asks which skill when no name is given', () => {
    expect(skillRunPrompt(registry, ' ', 'x')).toBe('Say which skill to run. Available: incident-report, runbook.');
  });
});
