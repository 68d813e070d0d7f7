import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** One place where code names a platform: the token as written, and where. */
interface PlatformMention {
  file: string;
  line: number;
  platforms: string[];
  token: string;
}

/**
 * The platforms are the folders of src/adapters/, read from disk, so a new adapter is covered the
 * day its folder appears.
 */
export function platformNames(repo: string): string[] {
  const dir = path.join(repo, 'src/adapters');
  return readdirSync(dir)
    .filter((name) => statSync(path.join(dir, name)).isDirectory())
    .sort();
}

/** Files allowed to name platforms: the adapters themselves and the composition root that wires them. */
export function isExempt(file: string): boolean {
  const rel = file.split(path.sep).join('/');
  return rel.startsWith('src/adapters/') || rel === 'src/config.ts' || rel === 'src/app.ts';
}

/**
 * The words of an identifier or string: split at anything that is not a letter or digit and at
 * camelCase humps, so `slackRules`, `isSlack`, `SLACK_TOKEN`, 'discord-role' and '@slack/bolt' all
 * yield the platform as a word of its own. Whole words, not substrings, so an unrelated word that
 * merely contains a platform's letters is not a hit.
 */
function wordsOf(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
}

/**
 * `console` is also JavaScript's global object, and "console" an ordinary English word, so it is
 * held to a narrower rule than the other platforms:
 * - an identifier counts when `console` is one word of several (`consoleAdapter`, `CONSOLE_X`,
 *   `isConsole`), or when the bare word is a name being given (a property key `{ console: … }`, a
 *   member `x.console`, a declared variable); a bare `console` that refers to something (the global
 *   in `console.log(…)`) does not count;
 * - a string counts when it is a key, not prose: its whole text is `console`, or `console` is joined
 *   to the rest by a separator with no spaces (`'console:alice'`, `` `${x}:console` ``).
 */
const SEPARATED_CONSOLE = /^console$|^console[:/._-]\S*$|^\S*[:/._-]console$/i;

function isNameBeingGiven(node: ts.Identifier): boolean {
  const parent = node.parent;
  if (ts.isPropertyAccessExpression(parent)) return parent.name === node;
  if (ts.isQualifiedName(parent)) return parent.right === node;
  // Declarations (variables, parameters, properties, methods, imports) hold their name in `name`.
  return 'name' in parent && parent.name === node;
}

function identifierNames(node: ts.Identifier | ts.PrivateIdentifier, platform: string): boolean {
  const words = wordsOf(node.text);
  if (!words.includes(platform)) return false;
  if (platform !== 'console' || words.length > 1) return true;
  return ts.isIdentifier(node) && isNameBeingGiven(node);
}

function stringNames(text: string, platform: string): boolean {
  if (platform === 'console') return SEPARATED_CONSOLE.test(text.trim());
  return wordsOf(text).includes(platform);
}

/** The text of a string-ish token (string, template piece, regular expression); undefined otherwise. */
function literalText(node: ts.Node): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) return node.text;
  if (ts.isRegularExpressionLiteral(node)) return node.text;
  return undefined;
}

const shown = (text: string) => (text.length > 80 ? text.slice(0, 77) + '...' : text);

/**
 * Every platform named in `source`'s code. Walking the syntax tree rather than the text keeps
 * comments (JSDoc included) out, since they are not nodes, while a string that contains `//` is
 * still read whole.
 */
export function platformMentionsOf(file: string, source: string, platforms: string[]): PlatformMention[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: PlatformMention[] = [];
  const record = (node: ts.Node, platforms: string[]) => {
    if (platforms.length === 0) return;
    // A template's pieces read badly alone (`}:slack\``); show the whole template.
    let whole = node;
    while (!ts.isTemplateExpression(whole) && ts.isTemplateLiteralToken(node) && whole.parent) whole = whole.parent;
    found.push({
      file,
      line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1,
      platforms,
      token: shown(whole.getText(sf)),
    });
  };
  const visit = (node: ts.Node): void => {
    const text = literalText(node);
    if (text !== undefined) {
      record(
        node,
        platforms.filter((p) => stringNames(text, p)),
      );
    } else if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) {
      record(
        node,
        platforms.filter((p) => identifierNames(node, p)),
      );
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Every `.ts` file under `root`, as repo-relative paths. */
function sourceFiles(repo: string, root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(path.join(repo, dir))) {
      const rel = path.join(dir, name);
      if (statSync(path.join(repo, rel)).isDirectory()) walk(rel);
      else if (name.endsWith('.ts')) out.push(rel.split(path.sep).join('/'));
    }
  };
  walk(root);
  return out.sort();
}

/** Every platform named in src/ outside the adapters and the composition root. */
export function platformMentions(repo: string): PlatformMention[] {
  const platforms = platformNames(repo);
  return sourceFiles(repo, 'src')
    .filter((f) => !isExempt(f))
    .flatMap((f) => platformMentionsOf(f, readFileSync(path.join(repo, f), 'utf8'), platforms));
}
