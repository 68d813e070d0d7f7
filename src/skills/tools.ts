import { readFile, stat } from 'node:fs/promises';
import { z } from 'zod';
import { defineBuiltinTool, type AnyBuiltinTool, type ToolOutput } from '../agent/tools/tool.ts';
import { LIMITS } from './limits.ts';
import { decodeText, SKILL_FILE, type Skill } from './load.ts';
import { confineToSkill } from './paths.ts';
import type { SkillRegistry } from './registry.ts';
import { closestName } from './suggest.ts';

type SkillLookup = Pick<SkillRegistry, 'list' | 'get'>;

const failure = (content: string): ToolOutput => ({ content, isError: true });

function findSkill(registry: SkillLookup, name: string): Skill | ToolOutput {
  const skill = registry.get(name.trim().toLowerCase());
  if (skill) return skill;
  const names = registry.list().map((s) => s.name);
  const guess = closestName(name, names);
  const hint = guess ? ` Did you mean "${guess}"?` : '';
  return failure(
    `There is no skill named "${name}".${hint} Available skills: ${names.length ? names.join(', ') : '(none)'}.`,
  );
}

const isSkill = (found: Skill | ToolOutput): found is Skill => 'body' in found;

/** The text load_skill returns: the instructions plus the files the skill can point to. */
function renderSkillForModel(skill: Skill): string {
  const parts = [`<skill name="${skill.name}">`, skill.body, '</skill>'];
  if (skill.files.length > 0) {
    parts.push(
      '',
      `Files in this skill (fetch one with read_skill_file, e.g. {"name": "${skill.name}", "path": "${skill.files[0]}"}):`,
      ...skill.files.map((f) => `- ${f}`),
    );
  }
  return parts.join('\n');
}

/** `list_skills`, `load_skill` and `read_skill_file`: read-only, so they never need an approval. */
/** The skill tools' names: an approval whose calls use one depends on the skills' version. */
export const SKILL_TOOL_NAMES: ReadonlySet<string> = new Set(['list_skills', 'load_skill', 'read_skill_file']);

export function createSkillTools(registry: SkillLookup): AnyBuiltinTool[] {
  const listSkills = defineBuiltinTool({
    name: 'list_skills',
    kind: 'read',
    description:
      'Lists every available skill with its description. Use it when the system prompt says some skills were left out, or to search for one by word.',
    version: '1',
    input: z.object({
      query: z.string().max(200).optional().describe('Only skills whose name or description contains these words'),
    }),
    approval: 'never',
    risk: 'low',
    idempotent: true,
    async execute({ query }) {
      const words = (query ?? '').toLowerCase().split(/\s+/).filter(Boolean);
      const matches = registry
        .list()
        .filter((s) => words.every((w) => `${s.name} ${s.description}`.toLowerCase().includes(w)));
      if (matches.length === 0) return query ? `No skill matches "${query}".` : 'No skills are installed.';
      return matches.map((s) => `- ${s.name}: ${s.description.replace(/\s+/g, ' ').trim()}`).join('\n');
    },
  });

  const loadSkill = defineBuiltinTool({
    name: 'load_skill',
    kind: 'read',
    description:
      "Loads a skill's full instructions by name (names are listed in the Skills section of the system prompt). Call it before doing a task a skill covers, then follow the instructions.",
    version: '1',
    input: z.object({ name: z.string().min(1).max(200).describe('The skill name, e.g. incident-report') }),
    approval: 'never',
    risk: 'low',
    idempotent: true,
    async execute({ name }) {
      const found = findSkill(registry, name);
      return isSkill(found) ? renderSkillForModel(found) : found;
    },
  });

  const readSkillFile = defineBuiltinTool({
    name: 'read_skill_file',
    kind: 'read',
    description:
      'Reads a file that belongs to a skill (a reference, template or script listed by load_skill). The path is relative to the skill folder.',
    version: '1',
    input: z.object({
      name: z.string().min(1).max(200).describe('The skill name'),
      path: z.string().min(1).max(4096).describe('Path inside the skill folder, e.g. references/checklist.md'),
    }),
    approval: 'never',
    risk: 'low',
    idempotent: true,
    async execute({ name, path: requested }) {
      const found = findSkill(registry, name);
      if (!isSkill(found)) return found;
      const confined = await confineToSkill(found.dir, requested).catch((err: unknown) => ({
        ok: false as const,
        reason: `the skill folder could not be read (${(err as Error).message})`,
      }));
      if (!confined.ok) {
        return failure(`Cannot read "${requested}" from skill "${found.name}": ${confined.reason}.${filesHint(found)}`);
      }
      try {
        const info = await stat(confined.path);
        if (!info.isFile())
          return failure(`"${requested}" in skill "${found.name}" is a folder, not a file.${filesHint(found)}`);
        if (info.size > LIMITS.resourceFileBytes) {
          return failure(
            `"${requested}" in skill "${found.name}" is ${Math.ceil(info.size / 1024)} KiB; files over ${LIMITS.resourceFileBytes / 1024} KiB are not returned.`,
          );
        }
        const text = decodeText(await readFile(confined.path));
        if (text === undefined) {
          return failure(`"${requested}" in skill "${found.name}" is a binary file; only text files can be read.`);
        }
        return text;
      } catch (err) {
        return failure(`Cannot read "${requested}" from skill "${found.name}": ${(err as Error).message}`);
      }
    },
  });

  return [listSkills, loadSkill, readSkillFile];
}

function filesHint(skill: Skill): string {
  const files = [SKILL_FILE, ...skill.files];
  const shown = files.slice(0, 20);
  return ` Files in this skill: ${shown.join(', ')}${files.length > shown.length ? ', …' : ''}.`;
}
