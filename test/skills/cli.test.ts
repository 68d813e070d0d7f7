import { mkdtemp, readFile, rm, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { skillsCommand } from '../../src/skills/cli.ts';
import { INSTALL_DIR } from '../../src/config.ts';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/skills');

let base: string;

async function cli(
  args: string[],
  dirs = { shippedDir: path.join(INSTALL_DIR, 'skills'), customDir: path.join(base, 'custom') },
) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await skillsCommand(args, { out: (l) => out.push(l), err: (l) => err.push(l) }, { dirs, cwd: base });
  return { code, out, err };
}

beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'skills-cli-'));
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('skills lint', () => {
  it('passes on the shipped skills with no problems at all', async () => {
    const { code, out } = await cli(['lint', path.join(INSTALL_DIR, 'skills'), '--strict']);
    expect(out).toEqual(['Checked 3 skills: 0 errors, 0 warnings.']);
    expect(code).toBe(0);
  });

  it('fails on the malformed corpus with one file:line: severity: message line per problem', async () => {
    const { code, out } = await cli(['lint', path.join(FIXTURES, 'malformed')]);
    expect(code).toBe(1);
    expect(out).toContain(
      `${path.join(FIXTURES, 'malformed', 'name_underscore', 'SKILL.md')}:2: error: "name" "name_underscore" may only use lowercase letters, digits and hyphens; remove "_"`,
    );
    expect(out).toContain(
      `${path.join(FIXTURES, 'malformed', 'yaml-duplicate-key', 'SKILL.md')}:4: error: invalid YAML: duplicated mapping key`,
    );
    expect(out.at(-1)).toMatch(/^Checked 38 skills: \d+ errors, \d+ warnings\.$/);
  });

  it('checks a single skill folder', async () => {
    const { code, out } = await cli(['lint', path.join(FIXTURES, 'malformed', 'unknown-keys')]);
    expect(code).toBe(0);
    expect(out).toHaveLength(3);
    expect(out[2]).toBe('Checked 1 skill: 0 errors, 2 warnings.');
  });

  it('fails on a rule the spec requires even when Countersign loads the skill, and says it loads', async () => {
    const { code, out } = await cli(['lint', path.join(FIXTURES, 'malformed', 'name-folder-mismatch')]);
    expect(code).toBe(1);
    expect(out).toEqual([
      `${path.join(FIXTURES, 'malformed', 'name-folder-mismatch', 'SKILL.md')}:2: error: "name" "some-other-name" does not match its folder "name-folder-mismatch"; rename one so they are equal (Countersign loads it anyway)`,
      'Checked 1 skill: 1 error, 0 warnings.',
    ]);
  });

  it.each([
    ['metadata that is not a map', 'metadata-not-map'],
    ['a description over 1024 characters', 'description-too-long'],
    ['a name over 64 characters', 'name-too-long'],
    ['a compatibility over 500 characters', 'compatibility-too-long'],
  ])('fails on %s', async (_, folder) => {
    const { code } = await cli(['lint', path.join(FIXTURES, 'malformed', folder)]);
    expect(code).toBe(1);
  });

  it('says so and fails when the folder holds no skills', async () => {
    await mkdir(path.join(base, 'empty', 'docs'), { recursive: true });
    const { code, out } = await cli(['lint', path.join(base, 'empty')]);
    expect(code).toBe(1);
    expect(out).toEqual([
      'empty: error: no skills found — a skill is a folder holding a SKILL.md file (with that exact name)',
      'Checked 0 skills: 1 error, 0 warnings.',
    ]);
  });

  it('fails on a skill file spelt skill.md, naming the fix', async () => {
    await mkdir(path.join(base, 'lower'), { recursive: true });
    await writeFile(
      path.join(base, 'lower', 'skill.md'),
      '---\nname: lower\ndescription: Lowercase file.\n---\nDo it.\n',
    );
    const { code, out } = await cli(['lint', path.join(base, 'lower')]);
    expect(code).toBe(1);
    expect(out).toEqual([
      `${path.join('lower', 'SKILL.md')}:1: error: the skill file is named skill.md; the spec names it SKILL.md: rename it`,
      'Checked 1 skill: 1 error, 0 warnings.',
    ]);
  });

  it('warns on allowed-tools written as a YAML list, and fails on it with --strict', async () => {
    const folder = path.join(FIXTURES, 'valid', 'allowed-tools-list');
    const lint = await cli(['lint', folder]);
    expect(lint.code).toBe(0);
    expect(lint.out).toEqual([
      expect.stringMatching(/allowed-tools-list\/SKILL\.md:4: warning: "allowed-tools" is a YAML list; /),
      'Checked 1 skill: 0 errors, 1 warning.',
    ]);
    expect((await cli(['lint', folder, '--strict'])).code).toBe(1);
  });

  it('fails on warnings too with --strict', async () => {
    const { code } = await cli(['lint', path.join(FIXTURES, 'malformed', 'unknown-keys'), '--strict']);
    expect(code).toBe(1);
  });

  it('prints paths relative to the working directory when they are inside it', async () => {
    await mkdir(path.join(base, 'mine', 'bad'), { recursive: true });
    await writeFile(path.join(base, 'mine', 'bad', 'SKILL.md'), '---\nname: bad\n---\n');
    const { out } = await cli(['lint', 'mine']);
    expect(out[0]).toBe(
      `${path.join('mine', 'bad', 'SKILL.md')}:1: error: missing required key "description": add a description of what the skill does and when to use it`,
    );
  });

  it('refuses a path that is not a folder', async () => {
    const { code, err } = await cli(['lint', 'nowhere']);
    expect(code).toBe(2);
    expect(err).toEqual(['nowhere is not a folder: give a skill folder or a folder of skills.']);
  });

  it('checks the shipped and custom folders when no folder is given', async () => {
    const { code, out } = await cli(['lint']);
    expect(code).toBe(0);
    expect(out).toEqual(['Checked 3 skills: 0 errors, 0 warnings.']);
  });
});

describe('skills new', () => {
  it('scaffolds a skill in the custom folder that lint passes but warns about until its description is written', async () => {
    const { code, out } = await cli(['new', 'weekly-report']);
    expect(code).toBe(0);
    const file = path.join(base, 'custom', 'weekly-report', 'SKILL.md');
    expect(out[0]).toBe(`Created ${path.join('custom', 'weekly-report', 'SKILL.md')}.`);
    // Countersign is not installed globally: the command it suggests is one the operator can paste.
    expect(out[1]).toMatch(/check it with: npx countersign skills lint /);
    expect(await readFile(file, 'utf8')).toMatch(/^---\nname: weekly-report\ndescription: /);
    const folder = path.join(base, 'custom', 'weekly-report');
    const lint = await cli(['lint', folder]);
    expect(lint.out).toEqual([
      `${path.join('custom', 'weekly-report', 'SKILL.md')}:3: warning: "description" is still the placeholder \`skills new\` wrote; say what the skill does and when to use it (the model picks skills by it)`,
      'Checked 1 skill: 0 errors, 1 warning.',
    ]);
    expect(lint.code).toBe(0);
    expect((await cli(['lint', folder, '--strict'])).code).toBe(1);
  });

  it('scaffolds a skill that passes lint strictly once its description is written', async () => {
    await cli(['new', 'weekly-report']);
    const file = path.join(base, 'custom', 'weekly-report', 'SKILL.md');
    const scaffolded = await readFile(file, 'utf8');
    await writeFile(
      file,
      scaffolded.replace(/^description: .*$/m, 'description: Writes the weekly ops report from the incident log.'),
    );
    const lint = await cli(['lint', path.join(base, 'custom', 'weekly-report'), '--strict']);
    expect(lint.out).toEqual(['Checked 1 skill: 0 errors, 0 warnings.']);
    expect(lint.code).toBe(0);
  });

  it('writes into --dir when given', async () => {
    const { code } = await cli(['new', 'triage', '--dir', 'elsewhere']);
    expect(code).toBe(0);
    expect(await readFile(path.join(base, 'elsewhere', 'triage', 'SKILL.md'), 'utf8')).toContain('name: triage');
  });

  it('refuses an invalid name, saying why', async () => {
    const { code, err } = await cli(['new', 'Weekly_Report']);
    expect(code).toBe(2);
    expect(err).toEqual([
      'Cannot create skill: the name "Weekly_Report" may only use lowercase letters, digits and hyphens; remove "_".',
    ]);
  });

  it('refuses to overwrite an existing skill', async () => {
    await cli(['new', 'triage']);
    const { code, err } = await cli(['new', 'triage']);
    expect(code).toBe(1);
    expect(err).toEqual([`${path.join('custom', 'triage')} already exists; pick another name or edit that skill.`]);
  });
});

describe('skills list', () => {
  it('lists the shipped skills and reports broken custom ones on stderr', async () => {
    await mkdir(path.join(base, 'custom', 'broken'), { recursive: true });
    await writeFile(path.join(base, 'custom', 'broken', 'SKILL.md'), 'no frontmatter here');
    const { code, out, err } = await cli(['list']);
    expect(code).toBe(0);
    expect(out[0]).toMatch(
      /^3 skills available:\n• incident-report: .+\n• runbook: .+\n• skillmaker: .+\n\n1 skill was skipped:\n• broken \(line 1\): no frontmatter: .+$/,
    );
    expect(err).toEqual([
      `${path.join('custom', 'broken', 'SKILL.md')}:1: error: no frontmatter: SKILL.md must start with a line "---", then name: and description:, then a closing "---"`,
    ]);
  });
});

describe('skills command', () => {
  it('prints usage and exits 2 for an unknown command', async () => {
    const { code, err } = await cli(['frobnicate']);
    expect(code).toBe(2);
    expect(err[0]).toBe('Unknown skills command "frobnicate".');
  });
});
