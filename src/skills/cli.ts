import { existsSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, loadConfig } from '../config.ts';
import { formatSkillList } from './commands.ts';
import { skillDirs, type SkillDirs } from './dirs.ts';
import { loadSkillFolder, scanSkillsRoot, SKILL_FILE, skillFileName } from './load.ts';
import { failsLint, formatProblem, type SkillProblem } from './problem.ts';
import { SkillRegistry } from './registry.ts';
import { placeholderDescription, skillNameProblem } from './validate.ts';

export interface CommandIO {
  out(line: string): void;
  err(line: string): void;
}

export interface SkillsCommandOptions {
  /** Where skills live; read from the configuration when absent. */
  dirs?: SkillDirs;
  /** Base for relative paths in arguments and output. */
  cwd?: string;
}

const USAGE = [
  'Usage: countersign skills <command>',
  '  list                        the skills the agent can use, and problems with any that were skipped',
  '  lint [DIR] [--strict]       check a skill folder or a folder of skills (default: the shipped and custom folders);',
  '                              exits 1 on an error (a rule the spec requires), or on a warning too with --strict',
  '  new NAME [--dir DIR]        scaffold DIR/NAME/SKILL.md (default DIR: the custom skills folder)',
];

/** `countersign skills …`. `args` are the words after `skills`; returns the exit code. */
export async function skillsCommand(
  args: string[],
  io: CommandIO,
  options: SkillsCommandOptions = {},
): Promise<number> {
  const cwd = options.cwd ?? process.cwd();
  const [command, ...rest] = args;
  const dirs = (): SkillDirs => options.dirs ?? skillDirs(loadConfig(), cwd);
  try {
    switch (command) {
      case 'list':
        return await listCommand(dirs(), io, cwd);
      case 'lint':
        return await lintCommand(rest, io, cwd, dirs);
      case 'new':
        return await newCommand(rest, io, cwd, dirs);
      case 'help':
      case '--help':
        for (const line of USAGE) io.out(line);
        return 0;
      case undefined:
        // A wrong invocation, as for `policy` and `grants`: usage on stderr, exit 2.
        for (const line of USAGE) io.err(line);
        return 2;
      default:
        io.err(`Unknown skills command "${command}".`);
        for (const line of USAGE) io.err(line);
        return 2;
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(err.message);
      return 2;
    }
    throw err;
  }
}

const display = (file: string, cwd: string) => {
  const relative = path.relative(cwd, file);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : file;
};

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

async function listCommand(dirs: SkillDirs, io: CommandIO, cwd: string): Promise<number> {
  const registry = new SkillRegistry(dirs);
  await registry.reload();
  io.out(formatSkillList(registry));
  for (const problem of registry.problems()) io.err(formatProblem(problem, display(problem.file, cwd)));
  return 0;
}

async function lintCommand(args: string[], io: CommandIO, cwd: string, dirs: () => SkillDirs): Promise<number> {
  const strict = args.includes('--strict');
  const paths = args.filter((a) => a !== '--strict');
  if (paths.some((p) => p.startsWith('--'))) {
    io.err(`Unknown option ${paths.find((p) => p.startsWith('--'))}. ${USAGE[3]!.trim()}`);
    return 2;
  }
  const targets = paths.length > 0 ? paths.map((p) => path.resolve(cwd, p)) : defaultLintTargets(dirs());
  let checked = 0;
  const problems: SkillProblem[] = [];
  const empty: string[] = [];
  for (const target of targets) {
    if (!existsSync(target) || !statSync(target).isDirectory()) {
      io.err(`${display(target, cwd)} is not a folder: give a skill folder or a folder of skills.`);
      return 2;
    }
    if (await skillFileName(target)) {
      const loaded = await loadSkillFolder(target, path.dirname(target), 'custom');
      checked += 1;
      problems.push(...loaded.problems);
    } else {
      const scan = await scanSkillsRoot(target, 'custom');
      checked += scan.folders;
      problems.push(...scan.problems);
      if (scan.folders === 0) empty.push(target);
    }
  }
  for (const problem of problems) io.out(formatProblem(problem, display(problem.file, cwd)));
  // A folder named on the command line that holds no skill is a mistake (wrong path, or a file
  // not called SKILL.md), not a pass. The default folders may legitimately be empty.
  const missing = paths.length > 0 ? empty : checked === 0 ? targets : [];
  for (const target of missing) {
    io.out(
      `${display(target, cwd)}: error: no skills found — a skill is a folder holding a ${SKILL_FILE} file (with that exact name)`,
    );
  }
  const errors = problems.filter(failsLint).length + missing.length;
  const warnings = problems.length - problems.filter(failsLint).length;
  io.out(`Checked ${plural(checked, 'skill')}: ${plural(errors, 'error')}, ${plural(warnings, 'warning')}.`);
  return errors > 0 || (strict && warnings > 0) ? 1 : 0;
}

function defaultLintTargets(dirs: SkillDirs): string[] {
  return [...new Set([dirs.shippedDir, dirs.customDir])].filter((d) => existsSync(d));
}

async function newCommand(args: string[], io: CommandIO, cwd: string, dirs: () => SkillDirs): Promise<number> {
  const names: string[] = [];
  let parent: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--dir') {
      const value = args[++i];
      if (!value) {
        io.err('--dir needs a folder, e.g. --dir skills');
        return 2;
      }
      parent = path.resolve(cwd, value);
    } else if (arg.startsWith('--')) {
      io.err(`Unknown option ${arg}. ${USAGE[4]!.trim()}`);
      return 2;
    } else names.push(arg);
  }
  if (names.length !== 1) {
    io.err(`Give exactly one skill name. ${USAGE[4]!.trim()}`);
    return 2;
  }
  const name = names[0]!;
  const problem = skillNameProblem(name);
  if (problem) {
    io.err(`Cannot create skill: ${problem.replace('"name" ', 'the name ')}.`);
    return 2;
  }
  const folder = path.join(parent ?? dirs().customDir, name);
  if (existsSync(folder)) {
    io.err(`${display(folder, cwd)} already exists; pick another name or edit that skill.`);
    return 1;
  }
  await mkdir(folder, { recursive: true });
  const file = path.join(folder, SKILL_FILE);
  await writeFile(file, scaffold(name), { flag: 'wx' });
  io.out(`Created ${display(file, cwd)}.`);
  io.out(`Write its description and steps, then check it with: npx countersign skills lint ${display(folder, cwd)}`);
  return 0;
}

/**
 * A SKILL.md with the sections a good skill has. Lint passes it but warns until its placeholder
 * description is replaced (`--strict` fails), so a scaffold cannot be shipped unedited.
 */
function scaffold(name: string): string {
  const title = name
    .split('-')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join(' ');
  return `---
name: ${name}
description: ${placeholderDescription(name)}
metadata:
  version: "1"
---

# ${title}

## When to use

The requests this skill is for, and the ones it is not for.

## Steps

1. Gather what you need from the conversation; ask for anything missing.
2. Do the work with the tools available. Actions that change anything need a person's approval.
3. Report what you did and what is left.

## Output

What the reply (or the file written) should look like.
`;
}
