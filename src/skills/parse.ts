import matter from 'gray-matter';
import { skillError, skillWarning, type SkillProblem } from './problem.ts';

/** Where each frontmatter key sits in SKILL.md, so every problem can name its line. */
export interface KeyLines {
  /** Top-level key → 1-based file line. */
  top: Map<string, number>;
  /** Top-level key → its nested keys (e.g. `metadata.version`) → 1-based file line. */
  nested: Map<string, Map<string, number>>;
}

interface ParsedSkillFile {
  /** The YAML frontmatter as parsed: not yet validated, so any shape. */
  data: unknown;
  keyLines: KeyLines;
  /** Markdown after the closing `---`. */
  body: string;
  /** 1-based file line the body starts on. */
  bodyStartLine: number;
}

export type ParseOutcome =
  { ok: true; parsed: ParsedSkillFile; problems: SkillProblem[] } | { ok: false; problems: SkillProblem[] };

/** Rest-of-line after the opening delimiter is empty, so the file's line 1 is the `---`. */
const FIRST_YAML_LINE = 2;

const refuseEngine = () => {
  throw new Error('only YAML frontmatter is accepted');
};

/**
 * Options for every gray-matter call. Passing an object also keeps gray-matter from caching each
 * input forever (it caches option-less calls by content, which grows without bound under hot
 * reload). Its JavaScript engine evaluates code, so a `---js` header must never reach it.
 */
const MATTER_OPTIONS = {
  language: 'yaml',
  engines: { javascript: refuseEngine, js: refuseEngine, coffee: refuseEngine, coffeescript: refuseEngine },
};

const isDelimiter = (line: string | undefined) => line !== undefined && line.trimEnd() === '---';

/**
 * Splits SKILL.md into frontmatter and body and parses the YAML. Shape checks live in
 * validate.ts; this only reports what stops the file being read at all.
 */
export function parseSkillText(rawText: string, file: string): ParseOutcome {
  const text = rawText.startsWith('\uFEFF') ? rawText.slice(1) : rawText;
  if (text.trim() === '') {
    return fail(
      file,
      1,
      'SKILL.md is empty: it needs a frontmatter block with name and description, then instructions',
    );
  }
  const lines = text.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
  if (!isDelimiter(lines[0])) {
    return fail(
      file,
      1,
      'no frontmatter: SKILL.md must start with a line "---", then name: and description:, then a closing "---"',
    );
  }
  const closeIndex = lines.findIndex((line, i) => i > 0 && isDelimiter(line));
  if (closeIndex === -1) {
    return fail(file, 1, 'the frontmatter opened on line 1 is never closed: add a line "---" after the last key');
  }

  const yamlLines = lines.slice(1, closeIndex);
  const closeLine = closeIndex + 1;
  // YAML forbids tabs in indentation; the parser gray-matter uses half-accepts them and silently
  // re-nests keys, so refuse them here with the line that has one.
  const tabbed = yamlLines.findIndex((line) => /^[ ]*\t/.test(line));
  if (tabbed !== -1) {
    return fail(file, tabbed + FIRST_YAML_LINE, 'invalid YAML: a tab is used for indentation; indent with spaces');
  }
  const problems: SkillProblem[] = [];
  let data: unknown;
  // Skills written for other clients often carry `description: Use when: …`, which strict YAML
  // rejects. Like the reference client guide suggests, quote such a value and try again.
  for (let attempt = 0; ; attempt++) {
    const result = parseYaml(yamlLines, closeLine);
    if (result.ok) {
      data = result.data;
      break;
    }
    const repaired = attempt < yamlLines.length ? quoteUnquotedColonValue(yamlLines, result.line) : undefined;
    if (!repaired) {
      const opened = unclosedQuoteLine(yamlLines, result.reason);
      if (opened !== undefined) {
        return fail(file, opened, `invalid YAML: the quoted value that starts on this line is never closed`);
      }
      return fail(file, result.line, `invalid YAML: ${result.reason}`);
    }
    problems.push(
      skillWarning(
        file,
        result.line,
        `the value of "${repaired}" contains ": " and is not quoted, which strict YAML rejects; put it in quotes`,
      ),
    );
  }

  return {
    ok: true,
    parsed: {
      data,
      keyLines: scanKeyLines(yamlLines),
      body: lines.slice(closeIndex + 1).join('\n'),
      bodyStartLine: closeLine + 1,
    },
    problems,
  };
}

function fail(file: string, line: number, message: string): ParseOutcome {
  return { ok: false, problems: [skillError(file, line, message)] };
}

type YamlResult = { ok: true; data: unknown } | { ok: false; line: number; reason: string };

function parseYaml(yamlLines: string[], closeLine: number): YamlResult {
  try {
    const parsed = matter(`---\n${yamlLines.join('\n')}\n---\n`, MATTER_OPTIONS);
    return { ok: true, data: parsed.data };
  } catch (err) {
    const { reason, markLine } = describeYamlError(err);
    // js-yaml counts from the (empty) rest of the opening `---` line, 0-based: mark line k is file line k+1.
    const line =
      markLine === undefined ? FIRST_YAML_LINE : Math.min(Math.max(markLine + 1, FIRST_YAML_LINE), closeLine);
    return { ok: false, line, reason };
  }
}

function describeYamlError(err: unknown): { reason: string; markLine: number | undefined } {
  if (typeof err === 'object' && err !== null) {
    const e = err as { reason?: unknown; message?: unknown; mark?: { line?: unknown } };
    const reason =
      typeof e.reason === 'string' ? e.reason : typeof e.message === 'string' ? e.message.split('\n')[0]! : String(err);
    const markLine = typeof e.mark?.line === 'number' ? e.mark.line : undefined;
    return { reason, markLine };
  }
  return { reason: String(err), markLine: undefined };
}

const PLAIN_KEY_VALUE = /^([A-Za-z0-9_-]+):[ \t]+(.+)$/;

/** Quotes `key: value: more` on the given file line in place; returns the key, or undefined if that is not the problem. */
function quoteUnquotedColonValue(yamlLines: string[], fileLine: number): string | undefined {
  const index = fileLine - FIRST_YAML_LINE;
  const line = yamlLines[index];
  const match = line === undefined ? null : PLAIN_KEY_VALUE.exec(line);
  if (!match) return undefined;
  const [, key, value] = match as unknown as [string, string, string];
  const trimmed = value.trim();
  if (!trimmed.includes(': ') || /^["'[{|>&*!]/.test(trimmed)) return undefined;
  yamlLines[index] = `${key}: ${JSON.stringify(trimmed)}`;
  return key;
}

/**
 * For "end of the stream within a quoted scalar" js-yaml points at the end of the frontmatter;
 * the useful line is where the quote was opened.
 */
function unclosedQuoteLine(yamlLines: readonly string[], reason: string): number | undefined {
  const quote = /double quoted/.test(reason) ? '"' : /single quoted/.test(reason) ? "'" : undefined;
  if (!quote || !/end of the stream/.test(reason)) return undefined;
  for (let i = yamlLines.length - 1; i >= 0; i--) {
    const value = /^[^#]*?:[ \t]+(.*)$/.exec(yamlLines[i]!)?.[1]?.trim();
    if (!value?.startsWith(quote)) continue;
    const closes = quote === '"' ? /^"(?:[^"\\]|\\.)*"/.test(value) : /^'(?:[^']|'')*'/.test(value);
    if (!closes) return i + FIRST_YAML_LINE;
  }
  return undefined;
}

const KEY = /^(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s#'"{[\-?:][^:#]*?|-[^\s:#][^:#]*?))[ \t]*:(?:[ \t]|$)/;

function keyOf(text: string): string | undefined {
  const match = KEY.exec(text);
  if (!match) return undefined;
  return match[1] ?? match[2] ?? match[3];
}

/**
 * Finds the line of each top-level key and of keys nested one level under them. A line scan
 * rather than a YAML AST because the parser gray-matter ships does not expose positions; block
 * mappings (the form every SKILL.md uses) are covered, flow mappings fall back to their parent's line.
 */
export function scanKeyLines(yamlLines: readonly string[]): KeyLines {
  const top = new Map<string, number>();
  const nested = new Map<string, Map<string, number>>();
  let parent: string | undefined;
  let childIndent: number | undefined;
  yamlLines.forEach((line, i) => {
    const fileLine = i + FIRST_YAML_LINE;
    if (line.trim() === '' || line.trimStart().startsWith('#')) return;
    const indent = line.length - line.trimStart().length;
    if (indent === 0) {
      parent = keyOf(line);
      childIndent = undefined;
      if (parent !== undefined && !top.has(parent)) top.set(parent, fileLine);
      return;
    }
    if (parent === undefined) return;
    childIndent ??= indent;
    if (indent !== childIndent) return;
    const child = keyOf(line.trimStart());
    if (child === undefined) return;
    let children = nested.get(parent);
    if (!children) nested.set(parent, (children = new Map()));
    if (!children.has(child)) children.set(child, fileLine);
  });
  return { top, nested };
}
