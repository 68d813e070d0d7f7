import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { git } from './git.ts';

/**
 * One git worktree per conversation and repository, on a branch of its own
 * (`countersign/<short conversation id>`), under `<worktrees dir>/<repo>/<short id>`. A marker file
 * beside each names its conversation, so housekeeping can remove what a crash left behind.
 */

/** A repository the bot may work on (REPOS / REPOS_FILE). */
export interface Repo {
  name: string;
  /** A local clone (its working tree, or a bare repository). */
  path: string;
  /** The branch changes land on; unset: the clone's current branch. */
  base?: string;
}

const Worktree = z.object({
  repo: z.string(),
  conversationId: z.string(),
  branch: z.string(),
  /** Absolute path of the worktree: the conversation's workspace while it works on the repo. */
  path: z.string(),
  /** The commit of `base` the branch started from (for a review: where the branch left `base`). */
  baseCommit: z.string(),
  /**
   * A review's worktree: `branch` is the person's branch, checked out detached at `head`. Removing
   * it never deletes that branch, and nothing is committed there.
   */
  review: z.object({ head: z.string() }).optional(),
});
export type Worktree = z.infer<typeof Worktree>;

/** Raised when a repository already has as many worktrees as it may. */
export class WorktreeLimitError extends Error {}

const MARKER = '.countersign-worktree.json';

/** A conversation id as a short, stable, path- and ref-safe name. */
export function shortConversationId(conversationId: string): string {
  return createHash('sha256').update(conversationId).digest('hex').slice(0, 12);
}

export class Worktrees {
  readonly #root: string;
  readonly #maxPerRepo: number;

  constructor(options: { root: string; maxPerRepo: number }) {
    this.#root = path.resolve(options.root);
    this.#maxPerRepo = options.maxPerRepo;
  }

  #dir(repo: Repo, conversationId: string): string {
    return this.pathFor(repo.name, conversationId);
  }

  /** Where the conversation's worktree of the repository named `repoName` is (or would be). */
  pathFor(repoName: string, conversationId: string): string {
    return path.join(this.#root, repoName, shortConversationId(conversationId));
  }

  /** The folder every worktree lives under (WORKTREES_DIR), absolute. */
  get root(): string {
    return this.#root;
  }

  /** The base branch: as configured, else the clone's current branch. */
  async base(repo: Repo): Promise<string> {
    if (repo.base) return repo.base;
    const { stdout } = await git(repo.path, ['symbolic-ref', '--short', 'HEAD']);
    return stdout.trim();
  }

  /**
   * The conversation's worktree of `repo`, made on first use from the tip of the base branch. Refused
   * with `WorktreeLimitError` when the repository has `maxPerRepo` already.
   */
  async open(repo: Repo, conversationId: string): Promise<Worktree> {
    const dir = this.#dir(repo, conversationId);
    const existing = await this.#readMarker(dir);
    if (existing) return existing;
    await this.#checkRoom(repo);
    const base = await this.base(repo);
    const branch = `countersign/${shortConversationId(conversationId)}`;
    await this.#clearUnmarked(repo, dir);
    await mkdir(path.dirname(dir), { recursive: true });
    // A crash after `worktree add` and before the marker leaves the branch behind: it is picked up
    // again, with its commits, rather than failing every later turn with "already exists".
    const kept = await git(repo.path, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`]).then(
      (out) => out.stdout.trim(),
      () => '',
    );
    if (kept) await git(repo.path, ['worktree', 'add', dir, branch]);
    else await git(repo.path, ['worktree', 'add', '-b', branch, dir, `${base}^{commit}`]);
    const baseCommit = (await git(repo.path, ['merge-base', base, branch])).stdout.trim();
    const worktree: Worktree = { repo: repo.name, conversationId, branch, path: dir, baseCommit };
    // Outside the worktree: beside it, so a commit of the worktree never includes it.
    await writeFile(`${dir}${MARKER}`, JSON.stringify(worktree));
    return worktree;
  }

  /**
   * The conversation's read-only worktree of `branch` (a review), detached at the branch's tip, made
   * on first use. The branch must exist in the clone; it is never changed.
   */
  async openReview(repo: Repo, conversationId: string, branch: string): Promise<Worktree> {
    const dir = this.#dir(repo, conversationId);
    const existing = await this.#readMarker(dir);
    if (existing) return existing;
    await this.#checkRoom(repo);
    await this.#clearUnmarked(repo, dir);
    const head = await git(repo.path, [
      'rev-parse',
      '--verify',
      '--end-of-options',
      `refs/heads/${branch}^{commit}`,
    ]).then(
      (out) => out.stdout.trim(),
      () => {
        throw new Error(`There is no branch "${branch.slice(0, 100)}" in ${repo.name}.`);
      },
    );
    const base = await this.base(repo);
    const baseCommit = (await git(repo.path, ['merge-base', base, head])).stdout.trim();
    await mkdir(path.dirname(dir), { recursive: true });
    await git(repo.path, ['worktree', 'add', '--detach', dir, head]);
    const worktree: Worktree = { repo: repo.name, conversationId, branch, path: dir, baseCommit, review: { head } };
    await writeFile(`${dir}${MARKER}`, JSON.stringify(worktree));
    return worktree;
  }

  /** A folder where the worktree goes but no marker names it (a crash midway): removed first. */
  async #clearUnmarked(repo: Repo, dir: string): Promise<void> {
    await git(repo.path, ['worktree', 'remove', '--force', dir]).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    await git(repo.path, ['worktree', 'prune']);
  }

  async #checkRoom(repo: Repo): Promise<void> {
    const held = await this.list(repo);
    if (held.length >= this.#maxPerRepo) {
      throw new WorktreeLimitError(
        `${repo.name} already has ${held.length} worktrees (REPO_WORKTREES_MAX=${this.#maxPerRepo}); merge or discard one first`,
      );
    }
  }

  /** The conversation's worktree of `repo`, if one exists (its marker, read directly). */
  find(repo: Repo, conversationId: string): Promise<Worktree | undefined> {
    return this.#readMarker(this.#dir(repo, conversationId));
  }

  /** The worktrees of `repo` this bot made (by their markers). */
  async list(repo: Repo): Promise<Worktree[]> {
    const dir = path.join(this.#root, repo.name);
    const names = await readdir(dir).catch(() => [] as string[]);
    const found: Worktree[] = [];
    for (const name of names.filter((n) => n.endsWith(MARKER))) {
      const worktree = await this.#readMarker(path.join(dir, name.slice(0, -MARKER.length)));
      if (worktree) found.push(worktree);
    }
    return found;
  }

  /** When the worktree was made: its marker is written once, beside it, when it is. */
  async madeAt(worktree: Worktree): Promise<Date | undefined> {
    return (await stat(`${worktree.path}${MARKER}`).catch(() => undefined))?.mtime;
  }

  /** Removes the worktree and the bot's branch (never a reviewed one); the base branch is untouched. */
  async remove(repo: Repo, worktree: Worktree): Promise<void> {
    await git(repo.path, ['worktree', 'remove', '--force', worktree.path]).catch(() => undefined);
    await rm(worktree.path, { recursive: true, force: true });
    await git(repo.path, ['worktree', 'prune']);
    // A review's branch is the person's own: only the bot's branches are deleted.
    if (!worktree.review) await git(repo.path, ['branch', '-D', worktree.branch]).catch(() => undefined);
    await rm(`${worktree.path}${MARKER}`, { force: true });
  }

  /**
   * Removes the worktrees whose conversation `isLive` says is gone (after a crash or expiry);
   * `onRemoved` is told of each.
   */
  async sweep(
    repo: Repo,
    isLive: (conversationId: string) => Promise<boolean>,
    onRemoved?: (worktree: Worktree) => Promise<void>,
  ): Promise<number> {
    let removed = 0;
    for (const worktree of await this.list(repo)) {
      if (await isLive(worktree.conversationId)) continue;
      await this.remove(repo, worktree);
      await onRemoved?.(worktree);
      removed++;
    }
    await git(repo.path, ['worktree', 'prune']);
    return removed;
  }

  async #readMarker(dir: string): Promise<Worktree | undefined> {
    const text = await readFile(`${dir}${MARKER}`, 'utf8').catch(() => undefined);
    if (text === undefined) return undefined;
    // A marker that is not ours (or was moved) names nothing: never act on a path it claims.
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return undefined;
    }
    const parsed = Worktree.safeParse(raw);
    return parsed.success && parsed.data.path === dir ? parsed.data : undefined;
  }
}
