/**
 * Reads the folder table of docs/architecture.md ("Folders and what they may import") into rules
 * the import graph can be held to, so the "may import" column cannot drift from the code. The
 * column is prose for people; this reads the few shapes it takes:
 *
 * - `core, db, agent (tool types)`: folders by their first word; what the parentheses say (which
 *   part of the folder) is for the reader, the check is by folder.
 * - `nothing of the app`; `every folder may import it`: a leaf, importable from any folder.
 * - `everything`, `everything but adapters and \`src/app.ts\``.
 * - `each platform's \`rules.ts\``: those files only.
 * - `http: queue (…)` after a `;`: entries for one folder of a row that names two.
 * - `never …`: a reminder of what is already not allowed; nothing to read.
 */

/** What one folder of the table may import. */
export interface FolderRule {
  /** `src/queue`, `src/adapters/<platform>`, `src/app` (for `src/app.ts`). */
  folder: string;
  everything: boolean;
  /** Folders (and their subfolders) excluded from `everything`. */
  except: string[];
  folders: string[];
  /** Single files allowed without their whole folder (each platform's `rules.ts`). */
  files: RegExp[];
  /** Any folder may import this one (`every folder may import it`). */
  leaf: boolean;
}

/** The rows of the first table whose header starts with `| folder`. */
function tableRows(markdown: string): string[][] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => /^\|\s*folder\s*\|/.test(l));
  if (start < 0) throw new Error('docs/architecture.md has no folder table (a header starting "| folder |")');
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  }
  return rows;
}

/** `s` split at `separator` where it is outside parentheses. */
function splitOutsideParens(s: string, separator: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === separator && depth === 0) {
      parts.push(current.trim());
      current = '';
    } else current += ch;
  }
  parts.push(current.trim());
  return parts.filter((p) => p !== '');
}

/** `adapters` → `src/adapters`, `` `src/app.ts` `` → `src/app`. */
function folderNamed(name: string): string {
  const bare = name.replace(/`/g, '').replace(/\.ts$/, '');
  return bare.startsWith('src/') ? bare : `src/${bare}`;
}

function ruleFor(folder: string, column: string): FolderRule {
  const rule: FolderRule = { folder, everything: false, except: [], folders: [], files: [], leaf: false };
  for (let part of splitOutsideParens(column, ';')) {
    if (/^every folder may import it\b/.test(part)) {
      rule.leaf = true;
      continue;
    }
    const scoped = /^(\w+): (.*)$/.exec(part);
    if (scoped) {
      if (folderNamed(scoped[1]!) !== folder) continue;
      part = scoped[2]!;
    }
    for (const entry of splitOutsideParens(part, ',')) {
      const but = /^everything but (.*)$/.exec(entry);
      if (entry === 'nothing of the app' || entry.startsWith('never ')) continue;
      else if (entry === 'everything') rule.everything = true;
      else if (but) {
        rule.everything = true;
        rule.except.push(...but[1]!.split(/\s+and\s+/).map(folderNamed));
      } else if (/^each platform's `rules\.ts`$/.test(entry)) rule.files.push(/^src\/adapters\/[^/]+\/rules\.ts$/);
      else {
        const word = /^(\w+)\b/.exec(entry)?.[1];
        if (!word)
          throw new Error(`docs/architecture.md: cannot read "${entry}" in the may-import column of ${folder}`);
        rule.folders.push(folderNamed(word));
      }
    }
  }
  return rule;
}

/** One rule per folder the table names; `platforms` expands `src/adapters/<platform>`. */
export function folderRules(markdown: string, platforms: string[]): FolderRule[] {
  const rules: FolderRule[] = [];
  for (const [names = '', , column = ''] of tableRows(markdown)) {
    for (const named of names.match(/`[^`]+`/g) ?? []) {
      const folder = folderNamed(named);
      const subjects = folder === 'src/adapters/<platform>' ? platforms.map((p) => `src/adapters/${p}`) : [folder];
      for (const subject of subjects) rules.push(ruleFor(subject, column));
    }
  }
  return rules;
}

const within = (folder: string, parent: string) => folder === parent || folder.startsWith(`${parent}/`);

/**
 * Imports the table does not allow, as "file -> file (folder may import: …)". `folderOf` is the
 * graph's notion of a file's folder. Imports of a top-level module the table does not name
 * (`src/config.ts`, `src/log.ts`, `src/metrics.ts`) are not its business: they are the small shared
 * homes, with rules of their own tested beside the graph.
 */
export function importsOutsideTable(
  graph: Map<string, string[]>,
  rules: FolderRule[],
  folderOf: (file: string) => string,
): string[] {
  const byFolder = new Map(rules.map((r) => [r.folder, r]));
  const leaves = rules.filter((r) => r.leaf).map((r) => r.folder);
  const found: string[] = [];
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    const rule = byFolder.get(from);
    if (!rule) continue;
    for (const target of targets) {
      const to = folderOf(target);
      if (to === from || !byFolder.has(to)) continue;
      const allowed =
        leaves.includes(to) ||
        rule.folders.includes(to) ||
        rule.files.some((f) => f.test(target)) ||
        (rule.everything && !rule.except.some((e) => within(to, e)));
      if (!allowed) found.push(`${file} -> ${target}`);
    }
  }
  return found.sort();
}
