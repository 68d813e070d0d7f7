import { createHash } from 'node:crypto';
import { lstat, readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { LIMITS } from './limits.ts';
import { parseSkillText } from './parse.ts';
import { isInside } from './paths.ts';
import { skillError, skillWarning, type SkillProblem } from './problem.ts';
import { validateFrontmatter, type SkillFrontmatter } from './validate.ts';

export const SKILL_FILE = 'SKILL.md';

export const SkillSource = z.enum(['shipped', 'custom']);
export type SkillSource = z.infer<typeof SkillSource>;

/** A skill that passed validation and can be offered to the model. */
export interface Skill extends SkillFrontmatter {
  source: SkillSource;
  /** Absolute path of the skill's folder. */
  dir: string;
  /** Absolute path of its SKILL.md. */
  file: string;
  /** Markdown instructions after the frontmatter. */
  body: string;
  /** Other files in the folder, relative to it, `/`-separated, sorted. */
  files: string[];
  /** sha256 over SKILL.md and every listed file: changes whenever anything the model can read changes. */
  contentHash: string;
}

export interface SkillLoad {
  skill?: Skill;
  problems: SkillProblem[];
}

const SKIPPED_DIRS = new Set(['node_modules']);
const isHidden = (name: string) => name.startsWith('.');

/**
 * Loads one skill folder. `root` is the skills folder it belongs to: a SKILL.md or folder that is a
 * symbolic link resolving outside it is refused, so a skill cannot smuggle in arbitrary files.
 */
export async function loadSkillFolder(dir: string, root: string, source: SkillSource): Promise<SkillLoad> {
  const file = path.join(dir, SKILL_FILE);
  const refuse = (message: string): SkillLoad => ({ problems: [skillError(file, 1, message)] });
  const realRoot = await realpath(root).catch(() => path.resolve(root));

  const dirStat = await lstat(dir).catch(() => undefined);
  if (!dirStat) return refuse(`the skill folder ${dir} does not exist`);
  let realDir = dir;
  if (dirStat.isSymbolicLink()) {
    realDir = await realpath(dir).catch(() => '');
    if (!realDir) return refuse(`the skill folder ${dir} is a symbolic link whose target does not exist`);
    if (!isInside(realRoot, realDir)) {
      return refuse(
        `the skill folder is a symbolic link to ${realDir}, outside the skills folder ${realRoot}; move the skill inside it`,
      );
    }
  }

  const found = await skillFileName(realDir);
  if (found !== SKILL_FILE) {
    return found
      ? refuse(`the skill file is named ${found}; the spec names it ${SKILL_FILE}: rename it`)
      : refuse(`${SKILL_FILE} is missing: every skill folder needs one`);
  }
  const fileStat = await lstat(file).catch(() => undefined);
  if (!fileStat) return refuse(`${SKILL_FILE} is missing: every skill folder needs one`);
  if (fileStat.isSymbolicLink()) {
    const target = await realpath(file).catch(() => '');
    if (!target) return refuse(`${SKILL_FILE} is a symbolic link whose target does not exist`);
    if (!isInside(realRoot, target)) {
      return refuse(
        `${SKILL_FILE} is a symbolic link to ${target}, outside the skills folder ${realRoot}; copy the file in instead`,
      );
    }
  }
  const target = await stat(file);
  if (!target.isFile()) return refuse(`${SKILL_FILE} is not a regular file`);
  if (target.size > LIMITS.skillFileBytes) {
    return refuse(
      `${SKILL_FILE} is ${kib(target.size)} KiB; the limit is ${kib(LIMITS.skillFileBytes)} KiB — move detail into files the skill references`,
    );
  }

  const bytes = await readFile(file);
  if (bytes.includes(0)) return refuse(`${SKILL_FILE} is a binary file, not text: it must be UTF-8 Markdown`);
  const text = decodeText(bytes);
  if (text === undefined) return refuse(`${SKILL_FILE} is not valid UTF-8 text; save it with UTF-8 encoding`);

  const parsed = parseSkillText(text, file);
  if (!parsed.ok) return { problems: parsed.problems };
  const checked = validateFrontmatter(parsed.parsed.data, {
    file,
    keyLines: parsed.parsed.keyLines,
    folderName: path.basename(dir),
  });
  const problems = [...parsed.problems, ...checked.problems];

  const body = parsed.parsed.body;
  const bodyLines = body.trimEnd().split('\n').length;
  if (bodyLines > LIMITS.bodyLinesAdvice) {
    problems.push(
      skillWarning(
        file,
        parsed.parsed.bodyStartLine + LIMITS.bodyLinesAdvice,
        `the instructions are ${bodyLines} lines long; keep ${SKILL_FILE} under ${LIMITS.bodyLinesAdvice} lines and move detail into referenced files`,
      ),
    );
  }
  problems.sort((a, b) => a.line - b.line);
  if (!checked.frontmatter) return { problems };

  const files = await listSkillFiles(realDir);
  return {
    skill: {
      ...checked.frontmatter,
      source,
      dir: path.resolve(dir),
      file: path.resolve(file),
      body: body.replace(/^\s*\n/, '').trimEnd(),
      files,
      contentHash: await hashSkill(bytes, realDir, files),
    },
    problems,
  };
}

export interface RootScan {
  skills: Skill[];
  problems: SkillProblem[];
  /** Skill folders examined (those with a SKILL.md), loaded or not. */
  folders: number;
}

/** Loads every skill folder directly under `root`. A missing root simply has no skills. */
export async function scanSkillsRoot(root: string, source: SkillSource): Promise<RootScan> {
  const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
  const skills: Skill[] = [];
  const problems: SkillProblem[] = [];
  const folders = entries
    .filter((e) => (e.isDirectory() || e.isSymbolicLink()) && !isHidden(e.name) && !SKIPPED_DIRS.has(e.name))
    .map((e) => e.name)
    .sort();
  let examined = 0;
  const folderOf = new Map<string, string>();
  for (const name of folders) {
    const dir = path.join(root, name);
    // A folder without SKILL.md is not a skill (docs, shared assets); only report folders that try
    // to be one, including those whose file is spelt skill.md (the loader says to rename it).
    if (!(await skillFileName(dir))) continue;
    examined++;
    const loaded = await loadSkillFolder(dir, root, source);
    problems.push(...loaded.problems);
    if (!loaded.skill) continue;
    // Names need not match folders (that only warns), so two folders can claim one name.
    const taken = folderOf.get(loaded.skill.name);
    if (taken) {
      problems.push(
        skillError(
          loaded.skill.file,
          1,
          `the folder "${taken}" already holds a skill named "${loaded.skill.name}"; this one is skipped — give it its folder's name`,
        ),
      );
      continue;
    }
    folderOf.set(loaded.skill.name, name);
    skills.push(loaded.skill);
  }
  return { skills, problems, folders: examined };
}

/**
 * The name of the folder's skill file: SKILL.md, or a differently cased spelling (skill.md, which
 * some tools write and case-insensitive disks hide), or undefined when there is none.
 */
export async function skillFileName(dir: string): Promise<string | undefined> {
  const names = await readdir(dir).catch(() => [] as string[]);
  if (names.includes(SKILL_FILE)) return SKILL_FILE;
  return names.find((n) => n.toLowerCase() === SKILL_FILE.toLowerCase());
}

/** Files of a skill other than SKILL.md, for the model to ask for by path. Symbolic links are left out. */
async function listSkillFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (relative: string, depth: number): Promise<void> => {
    if (depth > LIMITS.skillTreeDepth || found.length >= LIMITS.filesPerSkill) return;
    const entries = await readdir(path.join(dir, relative), { withFileTypes: true }).catch(() => []);
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      if (found.length >= LIMITS.filesPerSkill) return;
      if (isHidden(entry.name) || SKIPPED_DIRS.has(entry.name)) continue;
      const child = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(child, depth + 1);
      else if (entry.isFile() && child !== SKILL_FILE) found.push(child);
    }
  };
  await walk('', 0);
  return found.sort();
}

async function hashSkill(skillFile: Buffer, dir: string, files: readonly string[]): Promise<string> {
  const hash = createHash('sha256').update(SKILL_FILE).update('\0').update(skillFile);
  for (const relative of files) {
    const full = path.join(dir, relative);
    const info = await stat(full).catch(() => undefined);
    hash.update('\0').update(relative).update('\0');
    // Huge assets are fingerprinted by size so a re-scan stays cheap.
    if (info && info.size <= LIMITS.resourceFileBytes) hash.update(await readFile(full).catch(() => Buffer.alloc(0)));
    else hash.update(`size:${info?.size ?? -1}`);
  }
  return hash.digest('hex');
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The text of a file, or undefined when it is binary: a NUL byte or bytes that are not UTF-8. */
export function decodeText(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

const kib = (bytes: number) => Math.ceil(bytes / 1024);
