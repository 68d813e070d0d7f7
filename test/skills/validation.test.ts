import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/skills/limits.ts';
import { loadSkillFolder, scanSkillsRoot } from '../../src/skills/load.ts';
import { scanKeyLines } from '../../src/skills/parse.ts';
import { placeholderDescription, skillNameProblem, validateFrontmatter } from '../../src/skills/validate.ts';
import { BAD_NAMES, GOOD_NAMES, MALFORMED_CASES } from './malformed-cases.ts';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/skills');
const MALFORMED = path.join(FIXTURES, 'malformed');
const VALID = path.join(FIXTURES, 'valid');

const validSkill = (name: string) => `---\nname: ${name}\ndescription: A skill made by the test.\n---\nDo it.\n`;

describe('malformed skills', () => {
  it('has an expected verdict for every fixture folder, and a fixture for every verdict', async () => {
    const folders = (await readdir(MALFORMED)).sort();
    expect(MALFORMED_CASES.map((c) => c.folder).sort()).toEqual(folders);
    expect(folders.length).toBeGreaterThanOrEqual(25);
  });

  it.each(MALFORMED_CASES)('$folder is reported precisely', async ({ folder, loads, problems }) => {
    const dir = path.join(MALFORMED, folder);
    const result = await loadSkillFolder(dir, MALFORMED, 'custom');
    const file = path.join(dir, 'SKILL.md');
    expect(result.problems).toEqual(
      problems.map(([line, severity, message]) =>
        severity === 'spec'
          ? { severity: 'warning', breaksSpec: true, file, line, message }
          : { severity, file, line, message },
      ),
    );
    expect(result.skill !== undefined).toBe(loads);
  });

  it('reports every problem of the corpus when the whole folder is scanned, without stopping at the first', async () => {
    const scan = await scanSkillsRoot(MALFORMED, 'custom');
    const expectedCount = MALFORMED_CASES.reduce((n, c) => n + c.problems.length, 0);
    expect(scan.problems).toHaveLength(expectedCount);
    expect(scan.skills.map((s) => path.basename(s.dir)).sort()).toEqual(
      MALFORMED_CASES.filter((c) => c.loads)
        .map((c) => c.folder)
        .sort(),
    );
  });

  it('keeps a description with an unquoted colon intact after repairing it', async () => {
    const { skill } = await loadSkillFolder(path.join(MALFORMED, 'yaml-colon-in-description'), MALFORMED, 'custom');
    expect(skill?.description).toBe('Use this skill when: the user asks about colons');
  });

  it('keeps the text metadata entries and drops the others', async () => {
    const { skill } = await loadSkillFolder(path.join(MALFORMED, 'metadata-non-string'), MALFORMED, 'custom');
    expect(skill?.metadata).toEqual({ author: 'ops' });
  });
});

describe('skill names', () => {
  it.each(BAD_NAMES)('rejects $name', ({ name, message }) => {
    expect(skillNameProblem(name)).toBe(message);
  });

  it.each(GOOD_NAMES)('accepts %s', (name) => {
    expect(skillNameProblem(name)).toBeUndefined();
  });
});

describe('valid skills', () => {
  it('loads every optional key of the format', async () => {
    const { skill, problems } = await loadSkillFolder(path.join(VALID, 'full'), VALID, 'shipped');
    expect(problems).toEqual([]);
    expect(skill).toMatchObject({
      name: 'full',
      description: 'Uses every optional key of the format, with a folded description.',
      license: 'Apache-2.0',
      compatibility: 'Needs the workspace tools (read_file, write_file).',
      metadata: { author: 'ops-team', version: '2.1' },
      allowedTools: ['read_file', 'write_file'],
      source: 'shipped',
      body: '# Full\n\nFollow the checklist in references/checklist.md.',
      files: ['references/checklist.md', 'scripts/logo.bin', 'scripts/report.sh'],
    });
  });

  it('reads a file with a byte order mark and Windows line endings', async () => {
    const { skill, problems } = await loadSkillFolder(path.join(VALID, 'crlf-and-bom'), VALID, 'custom');
    expect(problems).toEqual([]);
    expect(skill?.description).toBe('Written on Windows, with a byte order mark.');
    expect(skill?.body).toBe('Step one.');
  });

  it('reads allowed-tools written as a YAML list, and warns that the format wants one line', async () => {
    const dir = path.join(VALID, 'allowed-tools-list');
    const { skill, problems } = await loadSkillFolder(dir, VALID, 'custom');
    expect(skill?.allowedTools).toEqual(['read_file', 'current_time']);
    expect(problems).toEqual([
      {
        severity: 'warning',
        file: path.join(dir, 'SKILL.md'),
        line: 4,
        message:
          '"allowed-tools" is a YAML list; the Agent Skills format makes it one line of space-separated names: allowed-tools: read_file current_time (Countersign reads the list anyway)',
      },
    ]);
  });

  it('loads every valid fixture, with no problem but the list-form allowed-tools warning', async () => {
    const scan = await scanSkillsRoot(VALID, 'custom');
    expect(scan.problems.map((p) => [path.basename(path.dirname(p.file)), p.severity])).toEqual([
      ['allowed-tools-list', 'warning'],
    ]);
    expect(scan.skills.map((s) => s.name)).toEqual(['allowed-tools-list', 'crlf-and-bom', 'full', 'minimal']);
  });

  it('warns on the placeholder description skills new writes, whatever the name', () => {
    const { problems } = validateFrontmatter(
      { name: 'weekly-report', description: placeholderDescription('weekly-report') },
      {
        file: 'SKILL.md',
        keyLines: { top: new Map([['description', 3]]), nested: new Map() },
        folderName: 'weekly-report',
      },
    );
    expect(problems).toEqual([
      {
        severity: 'warning',
        file: 'SKILL.md',
        line: 3,
        message:
          '"description" is still the placeholder `skills new` wrote; say what the skill does and when to use it (the model picks skills by it)',
      },
    ]);
  });

  it('takes a written description that merely starts like the placeholder', () => {
    const { problems } = validateFrontmatter(
      { name: 'weekly-report', description: 'Describe what changed this week, for the Monday report.' },
      { file: 'SKILL.md', keyLines: { top: new Map(), nested: new Map() }, folderName: 'weekly-report' },
    );
    expect(problems).toEqual([]);
  });
});

describe('skill files on disk', () => {
  let base: string;
  let root: string;
  let outside: string;

  beforeAll(async () => {
    base = await mkdtemp(path.join(tmpdir(), 'skills-disk-'));
    root = path.join(base, 'skills');
    outside = path.join(base, 'elsewhere');
    await mkdir(root);
    await mkdir(path.join(outside, 'escaped'), { recursive: true });
    await writeFile(path.join(outside, 'escaped', 'SKILL.md'), validSkill('escaped'));
    await writeFile(path.join(outside, 'SKILL.md'), validSkill('linked-file'));
  });

  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('refuses a SKILL.md that is a symbolic link to a file outside the skills folder', async () => {
    const dir = path.join(root, 'linked-file');
    await mkdir(dir);
    await symlink(path.join(outside, 'SKILL.md'), path.join(dir, 'SKILL.md'));
    const result = await loadSkillFolder(dir, root, 'custom');
    expect(result.skill).toBeUndefined();
    expect(result.problems).toEqual([
      {
        severity: 'error',
        file: path.join(dir, 'SKILL.md'),
        line: 1,
        message: `SKILL.md is a symbolic link to ${path.join(outside, 'SKILL.md')}, outside the skills folder ${root}; copy the file in instead`,
      },
    ]);
  });

  it('refuses a skill folder that is a symbolic link to a folder outside the skills folder', async () => {
    const dir = path.join(root, 'escaped');
    await symlink(path.join(outside, 'escaped'), dir);
    const result = await loadSkillFolder(dir, root, 'custom');
    expect(result.skill).toBeUndefined();
    expect(result.problems).toEqual([
      {
        severity: 'error',
        file: path.join(dir, 'SKILL.md'),
        line: 1,
        message: `the skill folder is a symbolic link to ${path.join(outside, 'escaped')}, outside the skills folder ${root}; move the skill inside it`,
      },
    ]);
  });

  it('follows a symbolic link that stays inside the skills folder', async () => {
    const shared = path.join(root, '.shared');
    await mkdir(shared);
    await writeFile(path.join(shared, 'SKILL.md'), validSkill('inside-link'));
    const dir = path.join(root, 'inside-link');
    await mkdir(dir);
    await symlink(path.join(shared, 'SKILL.md'), path.join(dir, 'SKILL.md'));
    const result = await loadSkillFolder(dir, root, 'custom');
    expect(result.problems).toEqual([]);
    expect(result.skill?.name).toBe('inside-link');
  });

  it('refuses a SKILL.md over the size limit', async () => {
    const dir = path.join(root, 'oversized');
    await mkdir(dir);
    await writeFile(path.join(dir, 'SKILL.md'), validSkill('oversized') + 'x'.repeat(LIMITS.skillFileBytes));
    const result = await loadSkillFolder(dir, root, 'custom');
    expect(result.skill).toBeUndefined();
    expect(result.problems).toEqual([
      {
        severity: 'error',
        file: path.join(dir, 'SKILL.md'),
        line: 1,
        message: 'SKILL.md is 257 KiB; the limit is 256 KiB — move detail into files the skill references',
      },
    ]);
  });

  it('refuses a SKILL.md that is a folder', async () => {
    const dir = path.join(root, 'folder-not-file');
    await mkdir(path.join(dir, 'SKILL.md'), { recursive: true });
    const result = await loadSkillFolder(dir, root, 'custom');
    expect(result.problems.map((p) => p.message)).toEqual(['SKILL.md is not a regular file']);
  });

  it('ignores folders without a SKILL.md and hidden folders when scanning', async () => {
    const scan = await scanSkillsRoot(root, 'custom');
    expect(scan.skills.map((s) => s.name)).toEqual(['inside-link']);
    expect(scan.problems.every((p) => !p.file.includes('.shared'))).toBe(true);
  });

  it('treats a missing skills folder as having no skills', async () => {
    const scan = await scanSkillsRoot(path.join(base, 'does-not-exist'), 'custom');
    expect(scan).toEqual({ skills: [], problems: [], folders: 0 });
  });
});

describe('skills as other clients and languages write them', () => {
  let root: string;
  const write = async (folder: string, text: string, file = 'SKILL.md') => {
    await mkdir(path.join(root, folder), { recursive: true });
    await writeFile(path.join(root, folder, file), text);
    return path.join(root, folder);
  };

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'skills-i18n-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('counts a description in characters, so 1,020 of them with 20 emoji is within the limit', async () => {
    const description = 'x'.repeat(1000) + '🚀'.repeat(20);
    expect(description.length).toBe(1040); // UTF-16 units, which the spec does not count
    const dir = await write('emoji', `---\nname: emoji\ndescription: ${description}\n---\nDo it.\n`);
    const { skill, problems } = await loadSkillFolder(dir, root, 'custom');
    expect(problems).toEqual([]);
    expect(skill?.description).toBe(description);
  });

  it('loads a skill with a lowercase Cyrillic name in its matching folder', async () => {
    const dir = await write('мой-навык', validSkill('мой-навык'));
    const { skill, problems } = await loadSkillFolder(dir, root, 'custom');
    expect(problems).toEqual([]);
    expect(skill?.name).toBe('мой-навык');
  });

  it('matches a name with a combining accent to its precomposed folder after NFKC, and keeps the composed form', async () => {
    const dir = await write('café', validSkill('cafe\u0301'));
    const { skill, problems } = await loadSkillFolder(dir, root, 'custom');
    expect(problems).toEqual([]);
    expect(skill?.name).toBe('café');
  });

  it('loads a skill whose name differs from its folder, with a warning that breaks the spec', async () => {
    const dir = await write('folder-name', validSkill('other-name'));
    const { skill, problems } = await loadSkillFolder(dir, root, 'custom');
    expect(skill?.name).toBe('other-name');
    expect(problems).toEqual([
      {
        severity: 'warning',
        breaksSpec: true,
        file: path.join(dir, 'SKILL.md'),
        line: 2,
        message: '"name" "other-name" does not match its folder "folder-name"; rename one so they are equal',
      },
    ]);
  });

  it('reports a skill file spelt skill.md instead of ignoring the folder', async () => {
    const dir = await write('lowercase-file', validSkill('lowercase-file'), 'skill.md');
    const scan = await scanSkillsRoot(root, 'custom');
    expect(scan.skills.map((s) => s.name)).not.toContain('lowercase-file');
    expect(scan.problems).toContainEqual({
      severity: 'error',
      file: path.join(dir, 'SKILL.md'),
      line: 1,
      message: 'the skill file is named skill.md; the spec names it SKILL.md: rename it',
    });
  });

  it('skips the second of two folders that claim the same name', async () => {
    const dir = await write('zz-duplicate', validSkill('other-name'));
    const scan = await scanSkillsRoot(root, 'custom');
    expect(scan.skills.filter((s) => s.name === 'other-name').map((s) => s.dir)).toEqual([
      path.join(root, 'folder-name'),
    ]);
    expect(scan.problems).toContainEqual({
      severity: 'error',
      file: path.join(dir, 'SKILL.md'),
      line: 1,
      message:
        'the folder "folder-name" already holds a skill named "other-name"; this one is skipped — give it its folder\'s name',
    });
  });
});

describe('key lines', () => {
  it('finds top-level and nested keys, quoted or not, skipping comments', () => {
    const lines = scanKeyLines([
      '# comment',
      'name: x',
      '"description": y',
      'metadata:',
      '  # note',
      '  owner: ops',
      '  "team": sre',
    ]);
    expect(Object.fromEntries(lines.top)).toEqual({ name: 3, description: 4, metadata: 5 });
    expect(Object.fromEntries(lines.nested.get('metadata') ?? [])).toEqual({ owner: 7, team: 8 });
  });
});
