import { normaliseWorkspacePath } from './glob.ts';

/** Arguments that name workspace paths. `cwd` is where a program runs, not what it touches. */
export const PATH_ARGS = [
  'path',
  'file',
  'file_path',
  'filePath',
  'filename',
  'dir',
  'directory',
  'source',
  'destination',
  'target',
  'src',
  'dest',
  'from',
  'to',
] as const;
export const PATH_LIST_ARGS = ['paths', 'files'] as const;

export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function pathsOf(args: unknown): string[] {
  if (!isRecord(args)) return [];
  const out: string[] = [];
  for (const key of PATH_ARGS) if (typeof args[key] === 'string') out.push(args[key]);
  for (const key of PATH_LIST_ARGS) {
    const list = args[key];
    if (Array.isArray(list)) for (const item of list) if (typeof item === 'string') out.push(item);
  }
  return out.map(normaliseWorkspacePath);
}

/**
 * Characters a shell gives meaning to: in a command written as one string (an MCP tool that runs it
 * through a shell) any of them can join a second program to the first, so a rule or a grant written
 * for words never matches such a string. Glob characters count too: the shell expands them.
 */
const SHELL_META = /[;&|$`<>(){}\n\r'"\\*?[\]!#~]/;

export function hasShellMeta(text: string): boolean {
  return SHELL_META.test(text);
}

/**
 * A call's program and arguments (`command`): run_command's argv as it is; a command string only
 * when no shell could read it as more than its words (see SHELL_META), split on whitespace.
 */
export function commandOf(args: unknown): string[] | undefined {
  if (!isRecord(args)) return undefined;
  return argvOf(args.command);
}

function argvOf(command: unknown): string[] | undefined {
  if (typeof command === 'string') {
    if (hasShellMeta(command)) return undefined;
    return command.trim().split(/\s+/).filter(Boolean);
  }
  if (Array.isArray(command) && command.every((a) => typeof a === 'string')) return command;
  return undefined;
}

/** A command string that a shell could read as more than its words. */
export function isShellString(args: unknown): boolean {
  return isRecord(args) && typeof args.command === 'string' && hasShellMeta(args.command);
}

/**
 * Whether an argument holds a rule's value (`args:`). Rule values are scalars. Read exactly, they are
 * compared with `===`, as JSON carries values to a tool: `-0` is `0` (JSON writes `0`), and NaN,
 * which no JSON holds, is nothing; a number and the same number written as a string differ. Read
 * leniently (`loose`), they also hold the forms a lenient tool may read as the value: a number or
 * `true`/`false` written as a string (`"0"`, `" 0"`, `"1e0"`, `"０"`, `"True"`), and a string that
 * differs only in Unicode form (composed or decomposed, fullwidth), surrounding spaces or case
 * (GitHub reads `Secrets` as the repository `secrets`). The engine decides both ways and keeps the
 * stricter outcome (`Policy.decide`), so a lenient reading only ever tightens.
 */
export function holdsArgValue(ruleValue: unknown, given: unknown, loose: boolean): boolean {
  if (ruleValue === given) return true;
  if (!loose) return false;
  const form = looseForm(ruleValue);
  return form !== undefined && form === looseForm(given);
}

/** A scalar as a lenient reader of it would take it; undefined for objects and arrays. */
function looseForm(value: unknown): string | undefined {
  if (value === null) return 'null';
  if (typeof value === 'number') return Number.isNaN(value) ? undefined : `number:${value === 0 ? 0 : value}`;
  if (typeof value === 'boolean') return `boolean:${value}`;
  if (typeof value !== 'string') return undefined;
  // NFKC folds compatibility forms (fullwidth `０`, `ﬁ`) and composes accents; upper then lower
  // case folds what lower case alone keeps apart (`ß` and `ss`, `ſ` and `s`).
  const folded = value.normalize('NFKC').trim().toUpperCase().toLowerCase();
  // Number('') is 0: an empty or blank string is no number.
  if (folded !== '' && !Number.isNaN(Number(folded))) return looseForm(Number(folded));
  if (folded === 'true' || folded === 'false') return `boolean:${folded}`;
  return `string:${folded}`;
}
