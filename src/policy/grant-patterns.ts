import { commandOf, hasShellMeta, PATH_ARGS, PATH_LIST_ARGS } from './call-args.ts';
import { compilePathGlob, compileWordGlob, GlobError, normaliseWorkspacePath, type Glob } from './glob.ts';

/**
 * The patterns a rule's `grant:` allows a standing grant to widen one argument to, e.g. for
 * run_command `command: "tail -n * logs/**"`. How a pattern reads depends on the argument:
 * - `command` (run_command's argv): word by word, the same number of words, each a word glob;
 *   a word that climbs (`..`) matches nothing, so `logs/**` never reaches outside `logs/`.
 * - path arguments (`path`, `paths`, …): a workspace path glob against the normalised path (every
 *   entry of a list).
 * - any other string: one word glob.
 * A value of another type is only ever granted exactly.
 */
const PATH_KEYS = new Set<string>(PATH_ARGS);
const PATH_LIST_KEYS = new Set<string>(PATH_LIST_ARGS);

type Matcher = (value: unknown) => boolean;
const cache = new Map<string, Matcher>();

function climbs(word: string): boolean {
  return word.replace(/\\/g, '/').split('/').includes('..');
}

/**
 * A pattern word matches a word with shell characters in it only by being exactly that word: `*`
 * stands for a plain word, never for `$(…)`, `;` or a quote that a shell (or a program that hands
 * its argument to one) would read as more.
 */
function matchesWord(glob: Glob, word: string): boolean {
  return hasShellMeta(word) ? glob.source === word : glob.test(word);
}

function compileMatcher(arg: string, source: string): Matcher {
  if (arg === 'command') {
    const words = source.trim().split(/\s+/).map(compileWordGlob);
    return (value) => {
      const argv = commandOf({ command: value });
      return (
        argv !== undefined &&
        argv.length === words.length &&
        argv.every((word, i) => !climbs(word) && matchesWord(words[i]!, word))
      );
    };
  }
  if (PATH_KEYS.has(arg) || PATH_LIST_KEYS.has(arg)) {
    const glob: Glob = compilePathGlob(source);
    const one = (v: unknown) => typeof v === 'string' && glob.test(normaliseWorkspacePath(v));
    return (value) =>
      Array.isArray(value) ? value.length > 0 && value.every(one) : !PATH_LIST_KEYS.has(arg) && one(value);
  }
  const glob = compileWordGlob(source);
  return (value) => typeof value === 'string' && matchesWord(glob, value);
}

function matcher(arg: string, source: string): Matcher {
  const key = `${arg}\u0000${source}`;
  let found = cache.get(key);
  if (!found) {
    found = compileMatcher(arg, source);
    cache.set(key, found);
  }
  return found;
}

/** Why `source` is not a usable grant pattern for `arg`, or undefined. */
export function grantPatternProblem(arg: string, source: string): string | undefined {
  try {
    compileMatcher(arg, source);
    return undefined;
  } catch (error) {
    if (error instanceof GlobError) return `bad grant pattern ${JSON.stringify(source)} for ${arg}: ${error.message}`;
    throw error;
  }
}

export function grantPatternMatches(arg: string, source: string, value: unknown): boolean {
  return matcher(arg, source)(value);
}

/** How much of a pattern is literal: the more, the narrower. */
function literalLength(source: string): number {
  return source.replace(/\*\*|[*?]|\[[^\]]*\]|\{[^}]*\}/g, '').length;
}

/**
 * The narrowest of the policy's patterns for `arg` that matches `value` (the most literal
 * characters; ties go to the shorter pattern), or undefined when none does.
 */
export function narrowestGrantPattern(arg: string, sources: readonly string[], value: unknown): string | undefined {
  const fitting = sources.filter((s) => grantPatternMatches(arg, s, value));
  fitting.sort((a, b) => literalLength(b) - literalLength(a) || a.length - b.length);
  return fitting[0];
}
