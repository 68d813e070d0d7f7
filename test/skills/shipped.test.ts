import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INSTALL_DIR } from '../../src/config.ts';
import { loadSkillFolder } from '../../src/skills/load.ts';
import { SkillRegistry } from '../../src/skills/registry.ts';

const SHIPPED = path.join(INSTALL_DIR, 'skills');
let registry: SkillRegistry;

beforeAll(async () => {
  registry = new SkillRegistry({ shippedDir: SHIPPED });
  await registry.reload();
});

describe('shipped skills', () => {
  it('load without a single problem', () => {
    expect(registry.problems()).toEqual([]);
    expect(registry.list().map((s) => s.name)).toEqual(['incident-report', 'runbook', 'skillmaker']);
  });

  it.each([
    ['skillmaker', ['write_file', 'list_skills', 'read_skill_file']],
    ['incident-report', ['write_file', 'read_file', 'read_skill_file']],
    ['runbook', ['read_file', 'request_human_approval', 'write_file']],
  ])('%s names the tools it relies on', (name, tools) => {
    const body = registry.get(name)!.body;
    for (const tool of tools) expect(body).toContain(`\`${tool}\``);
  });

  it.each(['skillmaker', 'incident-report', 'runbook'])('%s only points at files it ships', (name) => {
    const skill = registry.get(name)!;
    const referenced = [...skill.body.matchAll(/`(references\/[^`]+)`/g)].map((m) => m[1]!);
    expect(referenced.length).toBeGreaterThan(0);
    for (const file of referenced) expect(existsSync(path.join(skill.dir, file))).toBe(true);
    expect(skill.files).toEqual(expect.arrayContaining(referenced));
  });
});

describe("skillmaker's example", () => {
  let base: string;
  beforeAll(async () => {
    base = await mkdtemp(path.join(tmpdir(), 'skillmaker-'));
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('is a SKILL.md that passes lint without warnings', async () => {
    const template = await readFile(path.join(SHIPPED, 'skillmaker', 'references', 'template.md'), 'utf8');
    const example = /```markdown\n([\s\S]*?)\n```/.exec(template)?.[1];
    expect(example).toBeDefined();
    const dir = path.join(base, 'release-notes');
    await mkdir(dir);
    await writeFile(path.join(dir, 'SKILL.md'), `${example}\n`);
    const result = await loadSkillFolder(dir, base, 'custom');
    expect(result.problems).toEqual([]);
    expect(result.skill?.metadata).toEqual({ version: '1', owner: 'platform-team' });
  });
});
