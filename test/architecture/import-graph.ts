import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Every relative import of every source file under `root`, as repo-relative paths. */
export function importGraph(repo: string, root = 'src'): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const walk = (dir: string) => {
    for (const name of readdirSync(path.join(repo, dir))) {
      const rel = path.join(dir, name);
      if (statSync(path.join(repo, rel)).isDirectory()) walk(rel);
      else if (/\.ts$/.test(name)) graph.set(rel, importsOf(repo, rel));
    }
  };
  walk(root);
  return graph;
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g;

function importsOf(repo: string, file: string): string[] {
  const text = readFileSync(path.join(repo, file), 'utf8');
  const out = new Set<string>();
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (!spec?.startsWith('.')) continue;
    out.add(path.normalize(path.join(path.dirname(file), spec)));
  }
  return [...out];
}

/** Strongly connected components with more than one file (or a file importing itself). */
export function importCircles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (v: string) => {
    indices.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!indices.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indices.get(w)!));
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) circles.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!indices.has(v)) visit(v);
  return circles;
}

/** The folder a file belongs to for contracts: `src/adapters/slack`, `src/agent`, or `src` for top-level files. */
export function folderOf(file: string): string {
  const parts = file.split(path.sep);
  // Top-level files (config, log, metrics, app, cli) are each a home of their own.
  if (parts.length <= 2) return file.replace(/\.ts$/, '');
  if (parts[1] === 'adapters' && parts.length > 3) return parts.slice(0, 3).join('/');
  return parts.slice(0, 2).join('/');
}

/** Folder pairs that import each other, each pair once, with one example import each way. */
export function mutualFolders(
  graph: Map<string, string[]>,
  allowed: (from: string, to: string) => boolean = () => false,
): string[] {
  const edges = new Map<string, string>();
  for (const [from, tos] of graph) {
    for (const to of tos) {
      if (allowed(from, to)) continue;
      const a = folderOf(from);
      const b = folderOf(to);
      if (a !== b && !edges.has(`${a} -> ${b}`)) edges.set(`${a} -> ${b}`, `${from} -> ${to}`);
    }
  }
  const pairs: string[] = [];
  for (const [edge, example] of edges) {
    const [a, b] = edge.split(' -> ');
    if (a! < b! && edges.has(`${b} -> ${a}`)) pairs.push(`${example} / ${edges.get(`${b} -> ${a}`)}`);
  }
  return pairs;
}
