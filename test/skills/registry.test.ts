import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { openSkillRegistry, SkillRegistry, type SkillsChange } from '../../src/skills/registry.ts';

let base: string;
let shippedDir: string;
let customDir: string;
const open: SkillRegistry[] = [];

const skillText = (name: string, description: string, body = 'Do the work.') =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`;

async function writeSkill(root: string, folder: string, text: string): Promise<void> {
  await mkdir(path.join(root, folder), { recursive: true });
  await writeFile(path.join(root, folder, 'SKILL.md'), text);
}

async function registry(
  options: { watch?: boolean; log?: ReturnType<typeof createLogger> } = {},
): Promise<SkillRegistry> {
  const r = await openSkillRegistry({
    shippedDir,
    customDir,
    debounceMs: 20,
    watch: options.watch ?? false,
    log: options.log,
  });
  open.push(r);
  return r;
}

/** Resolves with the first change event that satisfies `accept`; polls nothing, fails after a generous timeout. */
function nextChange(r: SkillRegistry, accept: (c: SkillsChange) => boolean, timeoutMs = 20_000): Promise<SkillsChange> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error('no matching skills change event'));
    }, timeoutMs);
    const stop = r.onChange((change) => {
      if (!accept(change)) return;
      clearTimeout(timer);
      stop();
      resolve(change);
    });
  });
}

function capturedLog() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger('debug', sink), lines };
}

beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'skills-registry-'));
  shippedDir = path.join(base, 'shipped');
  customDir = path.join(base, 'workspace', 'skills');
  await mkdir(shippedDir, { recursive: true });
});

afterEach(async () => {
  for (const r of open.splice(0)) r.close();
  await rm(base, { recursive: true, force: true });
});

describe('SkillRegistry', () => {
  it('lists shipped and custom skills by name with their source', async () => {
    await writeSkill(shippedDir, 'triage', skillText('triage', 'Sorts incoming alerts.'));
    await writeSkill(customDir, 'deploy-check', skillText('deploy-check', 'Checks a deploy.'));
    const r = await registry();
    expect(r.list()).toEqual([
      {
        name: 'deploy-check',
        description: 'Checks a deploy.',
        source: 'custom',
        dir: path.join(customDir, 'deploy-check'),
      },
      {
        name: 'triage',
        description: 'Sorts incoming alerts.',
        source: 'shipped',
        dir: path.join(shippedDir, 'triage'),
      },
    ]);
    expect(r.get('triage')?.body).toBe('Do the work.');
    expect(r.get('nope')).toBeUndefined();
  });

  it('lets a custom skill override a shipped skill of the same name, and logs it', async () => {
    await writeSkill(shippedDir, 'triage', skillText('triage', 'Shipped triage.'));
    await writeSkill(customDir, 'triage', skillText('triage', 'Our own triage.'));
    const { log, lines } = capturedLog();
    const r = await registry({ log });
    expect(r.list()).toEqual([
      { name: 'triage', description: 'Our own triage.', source: 'custom', dir: path.join(customDir, 'triage') },
    ]);
    expect(lines.some((l) => String(l.msg).includes('custom skill "triage" overrides the shipped skill'))).toBe(true);
  });

  it('skips a broken skill, keeps the others, and reports the problem', async () => {
    await writeSkill(shippedDir, 'good', skillText('good', 'Works.'));
    await writeSkill(shippedDir, 'broken', '---\nname: broken\n---\n');
    const { log, lines } = capturedLog();
    const r = await registry({ log });
    expect(r.list().map((s) => s.name)).toEqual(['good']);
    expect(r.problems()).toEqual([
      {
        severity: 'error',
        file: path.join(shippedDir, 'broken', 'SKILL.md'),
        line: 1,
        message: 'missing required key "description": add a description of what the skill does and when to use it',
      },
    ]);
    expect(lines.some((l) => l.level === 40 && String(l.msg).startsWith('skill skipped:'))).toBe(true);
  });

  it('works when the custom skills folder does not exist', async () => {
    await writeSkill(shippedDir, 'good', skillText('good', 'Works.'));
    const r = await registry();
    expect(r.list().map((s) => s.name)).toEqual(['good']);
    expect(r.problems()).toEqual([]);
  });

  it('changes its version when a skill body changes, and keeps it when nothing changed', async () => {
    await writeSkill(shippedDir, 'triage', skillText('triage', 'Sorts alerts.'));
    const r = await registry();
    const first = r.version();
    await r.reload();
    expect(r.version()).toBe(first);
    await writeSkill(shippedDir, 'triage', skillText('triage', 'Sorts alerts.', 'Do the work differently.'));
    await r.reload();
    expect(r.version()).not.toBe(first);
  });

  it('changes its version when a file the skill references changes', async () => {
    await writeSkill(shippedDir, 'triage', skillText('triage', 'Sorts alerts.'));
    await mkdir(path.join(shippedDir, 'triage', 'references'));
    await writeFile(path.join(shippedDir, 'triage', 'references', 'list.md'), 'one');
    const r = await registry();
    const first = r.version();
    await writeFile(path.join(shippedDir, 'triage', 'references', 'list.md'), 'two');
    await r.reload();
    expect(r.version()).not.toBe(first);
  });

  it('gives the same version to two registries over the same files', async () => {
    await writeSkill(shippedDir, 'triage', skillText('triage', 'Sorts alerts.'));
    const a = await registry();
    const b = await registry();
    expect(a.version()).toBe(b.version());
    expect(a.version()).toMatch(/^[0-9a-f]{64}$/);
  });

  it('reports added, updated and removed skills to change listeners on reload', async () => {
    await writeSkill(shippedDir, 'old', skillText('old', 'Old.'));
    await writeSkill(shippedDir, 'kept', skillText('kept', 'Kept.'));
    const r = await registry();
    const changes: SkillsChange[] = [];
    r.onChange((c) => changes.push(c));
    await rm(path.join(shippedDir, 'old'), { recursive: true });
    await writeSkill(shippedDir, 'kept', skillText('kept', 'Kept, edited.'));
    await writeSkill(customDir, 'fresh', skillText('fresh', 'Fresh.'));
    await r.reload();
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({ added: ['fresh'], removed: ['old'], updated: ['kept'], version: r.version() });
  });

  it('picks up a new custom skill on its own while watching', async () => {
    const r = await registry({ watch: true });
    expect(r.list()).toEqual([]);
    const changed = nextChange(r, (c) => c.added.includes('fresh'));
    await writeSkill(customDir, 'fresh', skillText('fresh', 'Written after start.'));
    const change = await changed;
    expect(change.added).toEqual(['fresh']);
    expect(r.get('fresh')?.description).toBe('Written after start.');
  });

  it('picks up an edit to a shipped skill while watching', async () => {
    await writeSkill(shippedDir, 'triage', skillText('triage', 'Before.'));
    const r = await registry({ watch: true });
    const changed = nextChange(r, (c) => c.updated.includes('triage'));
    await writeFile(path.join(shippedDir, 'triage', 'SKILL.md'), skillText('triage', 'After.'));
    await changed;
    expect(r.get('triage')?.description).toBe('After.');
  });

  it('creates the custom skills folder when it starts watching', async () => {
    const r = await registry({ watch: true });
    const { stat } = await import('node:fs/promises');
    expect((await stat(customDir)).isDirectory()).toBe(true);
    r.close();
  });

  it('stops reporting changes once closed', async () => {
    const r = await registry({ watch: true });
    let calls = 0;
    r.onChange(() => calls++);
    r.close();
    await writeSkill(customDir, 'late', skillText('late', 'Too late.'));
    await r.reload();
    expect(calls).toBe(0);
  });

  it('loads a folder configured as both shipped and custom only once', async () => {
    await writeSkill(shippedDir, 'triage', skillText('triage', 'Sorts alerts.'));
    const r = new SkillRegistry({ shippedDir, customDir: shippedDir });
    open.push(r);
    await r.reload();
    expect(r.list()).toEqual([
      { name: 'triage', description: 'Sorts alerts.', source: 'shipped', dir: path.join(shippedDir, 'triage') },
    ]);
  });
});
