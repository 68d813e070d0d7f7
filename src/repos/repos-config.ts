import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isMap, isNode, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import { z } from 'zod';
import type { Repo } from './worktrees.ts';

/**
 * The repositories the bot may work on: `REPOS` (`api=/srv/api,web=/srv/web`) or `REPOS_FILE`
 * (YAML or JSON: per repository its `path`, and optionally `base`, `test` and `push`). Every
 * problem is reported at once, a file's at `file:line`.
 */

/** Lower-case, short, safe in a path and a branch name; what people type after `/code`. */
const REPO_NAME = /^[a-z0-9][a-z0-9_-]{0,39}$/;
const NAME_HINT = 'lower-case letters, digits, - and _ (at most 40), e.g. api';

/** A branch name git accepts and that cannot be read as an option. */
export const BRANCH = /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)[A-Za-z0-9._/-]{1,200}(?<![./])$/;

const RepoEntry = z.strictObject({
  path: z.string({ error: 'expected the path of a local git clone' }).trim().min(1),
  base: z.string().regex(BRANCH, 'expected a branch name such as main').optional(),
  /** The repository's test command, as an argv (run as a `run_command` under the policy). */
  test: z.array(z.string().min(1), { error: 'expected an argv list such as [npm, test]' }).min(1).optional(),
  /** The remote the base branch is pushed to after a merge; unset: nothing is pushed. */
  push: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,100}$/, 'expected a remote name such as origin')
    .optional(),
});

const ReposFile = z.strictObject({
  repos: z.record(z.string(), RepoEntry).superRefine((repos, ctx) => {
    for (const name of Object.keys(repos)) {
      if (!REPO_NAME.test(name))
        ctx.addIssue({ code: 'custom', path: [name], message: `a repository name is ${NAME_HINT}` });
    }
  }),
});

export interface RepoConfig extends Repo {
  test?: string[];
  push?: string;
}

export type ReposResult = { ok: true; repos: RepoConfig[] } | { ok: false; problems: string[] };

/** `REPOS`: `name=path` pairs; paths are resolved against `cwd`. */
export function parseReposVariable(value: string, cwd = process.cwd()): ReposResult {
  const problems: string[] = [];
  const repos: RepoConfig[] = [];
  for (const pair of value
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const at = pair.indexOf('=');
    const name = at > 0 ? pair.slice(0, at).trim() : '';
    const where = at > 0 ? pair.slice(at + 1).trim() : '';
    if (!name || !where) problems.push(`REPOS: "${pair.slice(0, 80)}" is not name=path (e.g. api=/srv/api)`);
    else if (!REPO_NAME.test(name))
      problems.push(`REPOS: "${name.slice(0, 60)}" is not a repository name: ${NAME_HINT}`);
    else if (repos.some((r) => r.name === name)) problems.push(`REPOS: "${name}" is named twice`);
    else repos.push({ name, path: path.resolve(cwd, where) });
  }
  return problems.length ? { ok: false, problems } : { ok: true, repos };
}

/** `REPOS_FILE`'s text; paths are resolved against the file's folder. */
export function parseReposFile(text: string, file: string): ReposResult {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number) => `${file}:${lines.linePos(offset).line}`;
  if (doc.errors.length > 0) return { ok: false, problems: doc.errors.map((e) => `${at(e.pos[0])}: ${e.message}`) };
  const parsed = ReposFile.safeParse(doc.toJS());
  if (!parsed.success) {
    return {
      ok: false,
      problems: parsed.error.issues.map((issue) => {
        // An unknown key is shown where it is written, not where its object starts.
        const keys = issue.code === 'unrecognized_keys' ? issue.keys.slice(0, 1) : [];
        const where = [...issue.path, ...keys].map(String);
        const offset = keyOffset(doc, where);
        const named = where.length ? ` (${where.join('.')})` : '';
        return `${offset === undefined ? file : at(offset)}${named}: ${issue.message}`;
      }),
    };
  }
  const folder = path.dirname(path.resolve(file));
  return {
    ok: true,
    repos: Object.entries(parsed.data.repos).map(([name, entry]) => ({
      name,
      path: path.resolve(folder, entry.path),
      ...(entry.base ? { base: entry.base } : {}),
      ...(entry.test ? { test: entry.test } : {}),
      ...(entry.push ? { push: entry.push } : {}),
    })),
  };
}

/** Where the key at `keys` is written in the document (its value's start for list items). */
function keyOffset(doc: Document, keys: readonly string[]): number | undefined {
  let node: unknown = doc.contents;
  let offset: number | undefined;
  for (const key of keys) {
    if (!isMap(node)) break;
    const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
    if (!pair) break;
    offset = isNode(pair.key) ? pair.key.range?.[0] : offset;
    node = pair.value;
  }
  return offset;
}

/** Reads `REPOS_FILE`, or says why it cannot be read. */
export function loadReposFile(file: string): ReposResult {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    return {
      ok: false,
      problems: [`${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`],
    };
  }
  return parseReposFile(text, file);
}

/** The configured repositories by name; an unknown name gets a message that lists the known ones. */
export class RepoCatalog {
  readonly #byName: Map<string, RepoConfig>;

  constructor(repos: readonly RepoConfig[]) {
    this.#byName = new Map(repos.map((r) => [r.name, r]));
  }

  /** The names people type, sorted. */
  names(): string[] {
    return [...this.#byName.keys()].sort();
  }

  get(name: string): { ok: true; repo: RepoConfig } | { ok: false; reason: string } {
    const repo = this.#byName.get(name);
    if (repo) return { ok: true, repo };
    const known = [...this.#byName.keys()].sort();
    return {
      ok: false,
      reason: known.length
        ? `There is no repository "${name.slice(0, 60)}" here. Known: ${known.join(', ')}.`
        : 'No repositories are configured: set REPOS (name=path pairs) or REPOS_FILE.',
    };
  }
}
