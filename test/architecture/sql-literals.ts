import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** A statement's text as written in a string or template literal (`${…}` shown as `$?`), and where. */
export interface SqlLiteral {
  file: string;
  line: number;
  text: string;
}

/** A literal is SQL when it starts with a statement keyword (upper case, as this code base writes SQL). */
const STATEMENT =
  /^\s*\(?\s*(SELECT|INSERT|UPDATE|DELETE|WITH|BEGIN|COMMIT|ROLLBACK|CREATE|ALTER|DROP|SET|LISTEN|UNLISTEN|NOTIFY)\b/;

/** Every SQL literal in `source` (comments are not literals, so a doc naming a table is not SQL). */
export function sqlLiteralsOf(file: string, source: string): SqlLiteral[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const found: SqlLiteral[] = [];
  const visit = (node: ts.Node) => {
    const text = literalText(node);
    if (text !== undefined) {
      if (STATEMENT.test(text)) {
        found.push({ file, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, text });
      }
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

function literalText(node: ts.Node): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node))
    return node.head.text + node.templateSpans.map((s) => '$?' + s.literal.text).join('');
  return undefined;
}

/** Every `.ts` file under `root`, as repo-relative paths. */
function sourceFiles(repo: string, root = 'src'): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(path.join(repo, dir))) {
      const rel = path.join(dir, name);
      if (statSync(path.join(repo, rel)).isDirectory()) walk(rel);
      else if (name.endsWith('.ts')) out.push(rel);
    }
  };
  walk(root);
  return out.sort();
}

/** The SQL literals of every source file under `root`. */
export function sqlLiterals(repo: string, root = 'src'): SqlLiteral[] {
  return sourceFiles(repo, root).flatMap((f) => sqlLiteralsOf(f, readFileSync(path.join(repo, f), 'utf8')));
}

/** The `schema.name`s a statement names (tables, functions), e.g. `countersign.work_items`. */
export function namesIn(text: string, schema: string): string[] {
  return [...new Set([...text.matchAll(new RegExp(`\\b${schema}\\.(\\w+)`, 'g'))].map((m) => m[1]!))];
}
