import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyTool, ToolContext, ToolOutput } from '../../src/agent/tools/tool.ts';
import { createLogger } from '../../src/log.ts';
import { LIMITS } from '../../src/skills/limits.ts';
import { SkillRegistry } from '../../src/skills/registry.ts';
import { createSkillTools } from '../../src/skills/tools.ts';

let base: string;
let registry: SkillRegistry;
let tools: Map<string, AnyTool>;

const ctx: ToolContext = {
  workItemId: 'work-1',
  conversationId: 'conv-1',
  requester: { platform: 'test', userId: 'u1' },
  signal: new AbortController().signal,
  log: createLogger('silent'),
};

async function run(tool: string, args: Record<string, unknown>): Promise<ToolOutput> {
  const t = tools.get(tool)!;
  const out = await t.execute(t.input.parse(args), ctx);
  return typeof out === 'string' ? { content: out } : out;
}

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'skills-tools-'));
  const root = path.join(base, 'skills');
  const dir = path.join(root, 'deploy-check');
  await mkdir(path.join(dir, 'references'), { recursive: true });
  await writeFile(
    path.join(dir, 'SKILL.md'),
    '---\nname: deploy-check\ndescription: Checks a deploy before it ships.\n---\n# Deploy check\n\nFollow references/steps.md.\n',
  );
  await writeFile(path.join(dir, 'references', 'steps.md'), '1. Look.\n2. Ship.\n');
  await writeFile(path.join(dir, 'references', 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
  await writeFile(path.join(dir, 'references', 'huge.md'), 'x'.repeat(LIMITS.resourceFileBytes + 1));
  await writeFile(path.join(base, 'secret.txt'), 'top secret');
  await symlink(path.join(base, 'secret.txt'), path.join(dir, 'references', 'escape.md'));
  await symlink(path.join(dir, 'references', 'steps.md'), path.join(dir, 'steps-link.md'));
  await mkdir(path.join(root, 'other'));
  await writeFile(path.join(root, 'other', 'SKILL.md'), '---\nname: other\ndescription: Another skill.\n---\nOther.\n');
  registry = new SkillRegistry({ shippedDir: root });
  await registry.reload();
  tools = new Map(createSkillTools(registry).map((t) => [t.name, t]));
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('skill tools', () => {
  it('are read-only tools that never ask for approval', () => {
    expect([...tools.keys()]).toEqual(['list_skills', 'load_skill', 'read_skill_file']);
    for (const tool of tools.values()) {
      expect(tool).toMatchObject({ approval: 'never', risk: 'low', idempotent: true });
    }
  });

  it('load_skill returns the instructions and the other files of the skill', async () => {
    const out = await run('load_skill', { name: 'deploy-check' });
    expect(out.isError).toBeUndefined();
    expect(out.content).toContain(
      '<skill name="deploy-check">\n# Deploy check\n\nFollow references/steps.md.\n</skill>',
    );
    expect(out.content).toContain('- references/steps.md');
    expect(out.content).toContain('- references/logo.png');
    expect(out.content).not.toContain('escape.md');
    expect(out.content).not.toContain('description:');
  });

  it('load_skill suggests the closest name when the skill is unknown', async () => {
    const out = await run('load_skill', { name: 'deploy-chek' });
    expect(out).toEqual({
      content:
        'There is no skill named "deploy-chek". Did you mean "deploy-check"? Available skills: deploy-check, other.',
      isError: true,
    });
  });

  it('list_skills lists every skill, or those matching a query', async () => {
    expect((await run('list_skills', {})).content).toBe(
      '- deploy-check: Checks a deploy before it ships.\n- other: Another skill.',
    );
    expect((await run('list_skills', { query: 'deploy' })).content).toBe(
      '- deploy-check: Checks a deploy before it ships.',
    );
    expect((await run('list_skills', { query: 'kubernetes' })).content).toBe('No skill matches "kubernetes".');
  });

  it('read_skill_file returns a file of the skill', async () => {
    expect(await run('read_skill_file', { name: 'deploy-check', path: 'references/steps.md' })).toEqual({
      content: '1. Look.\n2. Ship.\n',
    });
    expect((await run('read_skill_file', { name: 'deploy-check', path: './references//steps.md' })).content).toBe(
      '1. Look.\n2. Ship.\n',
    );
  });

  it('read_skill_file follows a symbolic link that stays inside the skill', async () => {
    expect((await run('read_skill_file', { name: 'deploy-check', path: 'steps-link.md' })).content).toBe(
      '1. Look.\n2. Ship.\n',
    );
  });

  const refused: Array<[string, string]> = [
    ['../other/SKILL.md', '".." is not accepted; the path must stay inside the skill folder'],
    ['references/../../other/SKILL.md', '".." is not accepted; the path must stay inside the skill folder'],
    ['..\\other\\SKILL.md', '".." is not accepted; the path must stay inside the skill folder'],
    [
      '/etc/passwd',
      'absolute paths are not accepted; give a path relative to the skill folder, e.g. references/guide.md',
    ],
    [
      'C:\\Windows\\win.ini',
      'absolute paths are not accepted; give a path relative to the skill folder, e.g. references/guide.md',
    ],
    [
      '~/.ssh/id_rsa',
      'absolute paths are not accepted; give a path relative to the skill folder, e.g. references/guide.md',
    ],
    ['%2e%2e/other/SKILL.md', 'percent-encoded paths are not accepted; write the path as plain text'],
    ['..%2fother%2fSKILL.md', 'percent-encoded paths are not accepted; write the path as plain text'],
    ['%252e%252e/secret.txt', 'percent-encoded paths are not accepted; write the path as plain text'],
    ['references/escape.md', 'the path is a symbolic link that leads outside the skill folder'],
    ['references/missing.md', 'no such file in this skill'],
    ['a\0b', 'the path contains a NUL character'],
    ['a/'.repeat(300) + 'b', `the path is 601 characters long; the limit is ${LIMITS.resourcePathChars}`],
  ];

  it.each(refused)('read_skill_file refuses %j', async (requested, reason) => {
    const out = await run('read_skill_file', { name: 'deploy-check', path: requested });
    expect(out.isError).toBe(true);
    expect(out.content).toMatch(new RegExp(`^Cannot read ".*" from skill "deploy-check": `));
    expect(out.content).toContain(reason);
    expect(out.content).not.toContain('top secret');
  });

  it('read_skill_file refuses a binary file with a clear message', async () => {
    expect(await run('read_skill_file', { name: 'deploy-check', path: 'references/logo.png' })).toEqual({
      content: '"references/logo.png" in skill "deploy-check" is a binary file; only text files can be read.',
      isError: true,
    });
  });

  it('read_skill_file refuses a file over the size limit', async () => {
    expect(await run('read_skill_file', { name: 'deploy-check', path: 'references/huge.md' })).toEqual({
      content: `"references/huge.md" in skill "deploy-check" is 257 KiB; files over 256 KiB are not returned.`,
      isError: true,
    });
  });

  it('read_skill_file refuses a folder', async () => {
    const out = await run('read_skill_file', { name: 'deploy-check', path: 'references' });
    expect(out.isError).toBe(true);
    expect(out.content).toContain('is a folder, not a file');
  });

  it('read_skill_file reports an unknown skill as an error result', async () => {
    const out = await run('read_skill_file', { name: 'nope', path: 'SKILL.md' });
    expect(out.isError).toBe(true);
    expect(out.content).toContain('There is no skill named "nope".');
  });
});
