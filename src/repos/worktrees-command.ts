import { parseArgs } from 'node:util';
import type { Queryable } from '../db/pool.ts';
import { forgetChange } from './authors-store.ts';
import path from 'node:path';
import { loadReposFile, parseReposVariable, type RepoConfig } from './repos-config.ts';
import { Worktrees, type Worktree } from './worktrees.ts';

/**
 * `countersign worktrees list|remove` (docs/code-work.md): the worktrees the bot holds, for an
 * operator — each with its repository, branch, conversation, age and state — and removing one by
 * hand. A worktree whose change card is still pending is refused unless `--force`: the card would
 * then name a change that is gone.
 */

interface WorktreesCommandDeps {
  repos: readonly RepoConfig[];
  worktrees: Worktrees;
  db: Queryable;
  /** Whether a change card for the branch waits for a decision (the envelopes' owner answers it). */
  cardWaits: CardWaits;
}

/** `pendingMergeCard` of src/approval/store.ts, handed in: this folder runs no SQL on envelopes. */
export type CardWaits = (conversationId: string, branch: string) => Promise<boolean>;

export interface CommandIo {
  out(line: string): void;
  err(line: string): void;
}

const USAGE = `Usage: countersign worktrees list [--json]
       countersign worktrees remove BRANCH|PATH [--force]   (BRANCH as the list shows it)`;

type State = 'review' | 'card pending' | 'open';

interface Row {
  repo: string;
  branch: string;
  conversation: string;
  path: string;
  ageSeconds: number | undefined;
  state: State;
}

/** The settings the command reads (src/config.ts), and the database. */
export interface WorktreesSettings {
  REPOS?: string | undefined;
  REPOS_FILE?: string | undefined;
  WORKTREES_DIR: string;
  REPO_WORKTREES_MAX: number;
}

/** `countersign worktrees …` with the repositories and worktrees the settings name. */
export async function worktreesCli(
  settings: WorktreesSettings,
  db: Queryable,
  cardWaits: CardWaits,
  args: string[],
  io: CommandIo,
): Promise<number> {
  const read = settings.REPOS
    ? parseReposVariable(settings.REPOS)
    : settings.REPOS_FILE
      ? loadReposFile(path.resolve(settings.REPOS_FILE))
      : { ok: true as const, repos: [] };
  if (!read.ok) {
    for (const problem of read.problems) io.err(problem);
    return 1;
  }
  const worktrees = new Worktrees({
    root: path.resolve(settings.WORKTREES_DIR),
    maxPerRepo: settings.REPO_WORKTREES_MAX,
  });
  return worktreesCommand({ repos: read.repos, worktrees, db, cardWaits }, args, io);
}

async function worktreesCommand(deps: WorktreesCommandDeps, args: string[], io: CommandIo): Promise<number> {
  const [verb, ...rest] = args;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      strict: true,
      options: { json: { type: 'boolean' }, force: { type: 'boolean' } },
    });
  } catch (error) {
    io.err(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (verb === 'list' && positionals.length === 0 && !values.force) return list(deps, Boolean(values.json), io);
  if (verb === 'remove' && positionals.length === 1 && !values.json)
    return remove(deps, positionals[0]!, Boolean(values.force), io);
  io.err(USAGE);
  return 2;
}

async function rows(deps: WorktreesCommandDeps): Promise<Array<Row & { worktree: Worktree; repoConfig: RepoConfig }>> {
  const found = [];
  for (const repo of deps.repos) {
    for (const worktree of await deps.worktrees.list(repo)) {
      const made = await deps.worktrees.madeAt(worktree);
      const state: State = worktree.review
        ? 'review'
        : (await deps.cardWaits(worktree.conversationId, worktree.branch))
          ? 'card pending'
          : 'open';
      found.push({
        repo: repo.name,
        branch: worktree.branch,
        conversation: worktree.conversationId,
        path: worktree.path,
        ageSeconds: made ? Math.max(0, Math.round((Date.now() - made.getTime()) / 1000)) : undefined,
        state,
        worktree,
        repoConfig: repo,
      });
    }
  }
  return found;
}

async function list(deps: WorktreesCommandDeps, json: boolean, io: CommandIo): Promise<number> {
  const found = await rows(deps);
  if (json) {
    for (const { worktree: _w, repoConfig: _r, ...row } of found) io.out(JSON.stringify(row));
    return 0;
  }
  if (found.length === 0) {
    io.out('No worktrees.');
    return 0;
  }
  const table = [
    ['REPO', 'BRANCH', 'CONVERSATION', 'AGE', 'STATE'],
    ...found.map((r) => [r.repo, r.branch, r.conversation, age(r.ageSeconds), r.state]),
  ];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table)
    io.out(
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
  return 0;
}

async function remove(deps: WorktreesCommandDeps, which: string, force: boolean, io: CommandIo): Promise<number> {
  const found = (await rows(deps)).filter((r) => r.branch === which || r.path === which);
  if (found.length === 0) {
    io.err(`No worktree "${which.slice(0, 200)}": \`countersign worktrees list\` shows the branches.`);
    return 1;
  }
  if (found.length > 1) {
    io.err(`"${which.slice(0, 200)}" names ${found.length} worktrees (reviews of one branch): give the path.`);
    return 1;
  }
  const [row] = found as [(typeof found)[number]];
  if (row.state === 'card pending' && !force) {
    io.err(
      `${row.branch} of ${row.repo} has a change card waiting for a decision: Discard it there, or add --force to remove it anyway.`,
    );
    return 1;
  }
  await deps.worktrees.remove(row.repoConfig, row.worktree);
  if (!row.worktree.review) await forgetChange(deps.db, { repo: row.repo, branch: row.branch });
  io.out(`Removed ${row.path}${row.worktree.review ? '' : ` and its branch ${row.branch}`} (${row.repo}).`);
  return 0;
}

function age(seconds: number | undefined): string {
  if (seconds === undefined) return '?';
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}
