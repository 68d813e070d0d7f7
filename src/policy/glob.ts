import { RE2JS } from 're2js';

/**
 * Globs for tool names and workspace paths. `*` matches within one path segment, `**` (a whole
 * segment) matches any number of segments, `?` one character, `{a,b}` either word and `[abc]` /
 * `[!abc]` a character class. Dots are not special: `runbooks/**` covers `runbooks/.hidden` too.
 * Paths compare case-insensitively (see `compilePathGlob`); tool names exactly.
 *
 * A glob is translated to a regular expression and run on RE2 (re2js), whose matching time is
 * linear in the text: the policy's globs are trusted, but the paths and words they are matched
 * against come from the model, and on V8's backtracking engine (or picomatch, which compiles to
 * it) `*a*a*a*b` took 25 s against a 1,000-character path. README.md's stack section says why
 * this is not picomatch.
 */
export interface Glob {
  readonly source: string;
  test(text: string): boolean;
}

export class GlobError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GlobError';
  }
}

function translate(glob: string, separator: boolean): string {
  const segment = separator ? '[^/]' : '.';
  let out = '';
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const before = i === 0 || glob[i - 1] === '/';
        const after = i + 2 === glob.length || glob[i + 2] === '/';
        if (separator && (!before || !after))
          throw new GlobError(`"**" must be a whole path segment (as in "a/**/b"), not part of one`);
        if (separator && glob[i + 2] === '/') {
          out += '(?:.*/)?'; // "**/" also matches no folder at all: "**/x" covers "x"
          i += 2;
        } else {
          out += '.*';
          i += 1;
        }
        continue;
      }
      out += `${segment}*`;
    } else if (c === '?') out += segment;
    else if (c === '{') {
      braces++;
      out += '(?:';
    } else if (c === '}') {
      if (braces === 0) throw new GlobError('"}" without a matching "{"');
      braces--;
      out += ')';
    } else if (c === ',' && braces > 0) out += '|';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) throw new GlobError('"[" without a matching "]"');
      let body = glob.slice(i + 1, end);
      if (body.startsWith('!')) body = `^${body.slice(1)}`;
      out += `[${body.replace(/\\/g, '\\\\')}]`;
      i = end;
    } else out += c.replace(/[.+^$()|\\/]/g, '\\$&');
  }
  if (braces > 0) throw new GlobError('"{" without a matching "}"');
  return out;
}

function compile(glob: string, separator: boolean, caseInsensitive: boolean): Glob {
  if (glob.trim() === '') throw new GlobError('a glob cannot be empty');
  // DOTALL: `**` spans every character, a line break too, as `*` does within a segment.
  const flags = RE2JS.DOTALL | (caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0);
  const pattern = `^${translate(glob, separator)}$`;
  let regex: RE2JS;
  try {
    regex = RE2JS.compile(pattern, flags);
  } catch (error) {
    // Only a character class can be malformed here (`[z-a]`): say so, as for the other mistakes.
    const reason = (error as Error).message.replace(/^error parsing regexp: /, '');
    throw new GlobError(`not a valid character class: ${reason}`);
  }
  return { source: glob, test: (text) => regex.test(text) };
}

/** A tool-name glob: `github__*`, `deploy__{plan,apply}`, `run_command`. */
export function compileNameGlob(glob: string): Glob {
  if (/\s/.test(glob)) throw new GlobError('a tool name glob has no spaces');
  return compile(glob, false, false);
}

/**
 * A workspace path glob, relative to the workspace root. Case-insensitive, because the workspace
 * may sit on a case-insensitive file system (macOS, Windows), where `Skills/x` *is* `skills/x`: a
 * rule that guards a folder must not be dodged by a change of case.
 */
export function compilePathGlob(glob: string): Glob {
  if (glob.startsWith('/')) throw new GlobError('paths are relative to the workspace root; drop the leading "/"');
  if (glob.split('/').includes('..')) throw new GlobError('".." cannot appear in a path glob');
  return compile(glob.replace(/^\.\//, ''), true, true);
}

/**
 * One word of a command, or a plain string argument, in a grant pattern: `*` stays within a path
 * segment and case matters (`Tail` is another program than `tail`).
 */
export function compileWordGlob(glob: string): Glob {
  if (/\s/.test(glob)) throw new GlobError('a word has no spaces');
  return compile(glob, true, false);
}

/**
 * A path argument as the policy compares it: slashes forward, `.` and empty segments dropped (so a
 * leading "/" too: `/skills/x` is judged as `skills/x`, which errs towards the stricter rule), `..`
 * folded. A path that climbs out of the workspace keeps its leading `..` and so matches no relative
 * glob but `**` (the workspace tools refuse it anyway).
 */
export function normaliseWorkspacePath(raw: string): string {
  const parts: string[] = [];
  for (const part of raw.replace(/\\/g, '/').split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..' && parts.length > 0 && parts[parts.length - 1] !== '..') parts.pop();
    else parts.push(part);
  }
  return parts.join('/');
}
