/**
 * Finds literal sleeps in test code: a timer that waits a fixed number of milliseconds over a limit
 * before the test goes on. A sleep long enough to let a loaded CI machine catch up is time every
 * run pays on a fast one, and still too short on a slower one; a test waits on the condition
 * instead (`waitFor`, `vi.waitFor`, an event). Timers whose handle is kept (a deadline that is
 * cleared when the awaited thing comes) cost nothing when the test passes, so they are not counted.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export interface LongSleep {
  /** Repo-relative path and 1-based line, `test/x.test.ts:12`. */
  at: string;
  ms: number;
  code: string;
}

/** Callees that wait their first argument's milliseconds: promise timers and the usual helper names. */
const PROMISE_SLEEPS = new Set(['sleep', 'delay', 'pause', 'wait']);

/** Every numeric literal in `node`, skipping function bodies (a callback's own numbers are not the delay). */
function literalsIn(node: ts.Node): number[] {
  if (ts.isNumericLiteral(node)) return [Number(node.text.replaceAll('_', ''))];
  if (ts.isFunctionLike(node)) return [];
  const found: number[] = [];
  node.forEachChild((child) => {
    found.push(...literalsIn(child));
  });
  return found;
}

function calleeName(call: ts.CallExpression): string | undefined {
  const callee = call.expression;
  if (ts.isIdentifier(callee)) return callee.text;
  if (ts.isPropertyAccessExpression(callee)) return callee.name.text;
  return undefined;
}

/** Local names bound to node:timers/promises' setTimeout (`import { setTimeout as sleep } …`). */
function promiseTimerNames(file: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  for (const statement of file.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    if (!/^(node:)?timers\/promises$/.test(statement.moduleSpecifier.text)) continue;
    const bindings = statement.importClause?.namedBindings;
    if (bindings && ts.isNamedImports(bindings))
      for (const element of bindings.elements)
        if ((element.propertyName ?? element.name).text === 'setTimeout') names.add(element.name.text);
  }
  return names;
}

/** The delay argument of a call that sleeps, or undefined when the call is no sleep. */
function delayOf(call: ts.CallExpression, promiseTimers: Set<string>): ts.Expression | undefined {
  const name = calleeName(call);
  if (name === undefined) return undefined;
  if (promiseTimers.has(name) || PROMISE_SLEEPS.has(name)) return call.arguments[0];
  if (name !== 'setTimeout') return undefined;
  // A kept handle is a deadline (cleared when the awaited thing comes), not a wait.
  const parent = call.parent;
  if (ts.isVariableDeclaration(parent) || ts.isBinaryExpression(parent) || ts.isPropertyAssignment(parent))
    return undefined;
  return call.arguments[1];
}

export function longSleepsIn(
  source: string,
  fileName: string,
  limitMs: number,
): Array<Omit<LongSleep, 'at'> & { line: number }> {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const promiseTimers = promiseTimerNames(file);
  const found: Array<Omit<LongSleep, 'at'> & { line: number }> = [];
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node)) {
      const delay = delayOf(node, promiseTimers);
      const ms = delay ? Math.max(0, ...literalsIn(delay)) : 0;
      if (ms > limitMs)
        found.push({
          line: file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1,
          ms,
          code: node.getText(file).replace(/\s+/g, ' ').slice(0, 80),
        });
    }
    node.forEachChild(visit);
  };
  visit(file);
  return found;
}

/** Literal sleeps over `limitMs` in the code files under `root`, except those under `exceptUnder`. */
export function longSleeps(repo: string, root: string, exceptUnder: string[], limitMs: number): LongSleep[] {
  const found: LongSleep[] = [];
  const walk = (dir: string) => {
    if (exceptUnder.some((skip) => dir === skip)) return;
    for (const entry of readdirSync(path.join(repo, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (/\.(ts|mts|js|mjs)$/.test(entry.name))
        for (const sleep of longSleepsIn(readFileSync(path.join(repo, rel), 'utf8'), rel, limitMs))
          found.push({ at: `${rel}:${sleep.line}`, ms: sleep.ms, code: sleep.code });
    }
  };
  walk(root);
  return found;
}
