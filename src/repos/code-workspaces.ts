import { readFileSync } from 'node:fs';
import { mkdir, rm, writeFile, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { ChangeAuthors } from './change-authors.ts';
import { git } from './git.ts';
import { RepoCatalog, type RepoConfig } from './repos-config.ts';
import { shortConversationId, type Worktree, type Worktrees } from './worktrees.ts';

/**
 * Which repository a conversation works on, and how: `code` (its workspace is the conversation's
 * worktree, on a branch of its own) or `review` (a read-only worktree of someone's branch). The
 * binding lives on disk beside the worktrees, so every tool call can find its workspace without a
 * database round trip, and a worker that has the worktrees has the bindings.
 */
export const CodeBinding = z.object({
  conversationId: z.string().min(1),
  repo: z.string().min(1),
  mode: z.enum(['code', 'review']),
  /** The reviewed branch. */
  branch: z.string().optional(),
});
export type CodeBinding = z.infer<typeof CodeBinding>;

/** Repository names never start with a dot, so this folder cannot be a repository's. */
const BINDINGS = '.conversations';

export type BindResult = { ok: true; binding: CodeBinding } | { ok: false; reason: string };

export class CodeWorkspaces {
  readonly catalog: RepoCatalog;
  readonly worktrees: Worktrees;
  /** Who put content into each change: forgotten with its branch. */
  readonly #authors: ChangeAuthors | undefined;

  constructor(catalog: RepoCatalog, worktrees: Worktrees, authors?: ChangeAuthors) {
    this.catalog = catalog;
    this.worktrees = worktrees;
    this.#authors = authors;
  }

  #file(conversationId: string): string {
    return path.join(this.worktrees.root, BINDINGS, `${shortConversationId(conversationId)}.json`);
  }

  /** The conversation's binding, read from disk (each call: another process may have made it). */
  bindingOf(conversationId: string): CodeBinding | undefined {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(this.#file(conversationId), 'utf8'));
    } catch {
      return undefined;
    }
    const parsed = CodeBinding.safeParse(raw);
    // A file naming another conversation (a short-id collision, a moved file) binds nothing.
    return parsed.success && parsed.data.conversationId === conversationId ? parsed.data : undefined;
  }

  /**
   * The folder the conversation's tools work in when it works on a repository: its worktree — also
   * while it does not exist (after a merge or discard, until the next turn opens a fresh one), so
   * tools fail there instead of falling back to the deployment's workspace. Undefined: not bound.
   */
  rootOf(conversationId: string): string | undefined {
    const binding = this.bindingOf(conversationId);
    return binding ? this.worktrees.pathFor(binding.repo, conversationId) : undefined;
  }

  /**
   * Binds the conversation to `repo` (once: a conversation works on one repository and in one mode)
   * and opens its worktree. The reason says what is wrong: an unknown repository (with the known
   * ones), another repository already bound, the worktree limit, a branch that does not exist.
   */
  async bind(conversationId: string, want: Omit<CodeBinding, 'conversationId'>): Promise<BindResult> {
    const found = this.catalog.get(want.repo);
    if (!found.ok) return found;
    const existing = this.bindingOf(conversationId);
    if (existing && (existing.repo !== want.repo || existing.mode !== want.mode || existing.branch !== want.branch)) {
      const what = existing.mode === 'review' ? `reviews ${existing.branch ?? 'a branch'} of` : 'works on';
      return {
        ok: false,
        reason: `This conversation already ${what} ${existing.repo}; start a new conversation for ${want.repo}.`,
      };
    }
    const binding: CodeBinding = { conversationId, ...want };
    try {
      await this.#openFor(found.repo, binding);
    } catch (error) {
      return { ok: false, reason: (error as Error).message };
    }
    if (!existing) {
      await mkdir(path.dirname(this.#file(conversationId)), { recursive: true });
      await writeFile(this.#file(conversationId), JSON.stringify(binding));
    }
    return { ok: true, binding };
  }

  /**
   * The bound conversation's worktree, (re)opened: after a merge or discard the next turn starts a
   * fresh branch from the base. Undefined when the conversation is not bound.
   */
  async open(
    conversationId: string,
  ): Promise<{ binding: CodeBinding; repo: RepoConfig; worktree: Worktree } | undefined> {
    const bound = this.#bound(conversationId);
    return bound && { ...bound, worktree: await this.#openFor(bound.repo, bound.binding) };
  }

  /** The conversation's binding and its configured repository, when both exist. */
  #bound(conversationId: string): { binding: CodeBinding; repo: RepoConfig } | undefined {
    const binding = this.bindingOf(conversationId);
    const found = binding ? this.catalog.get(binding.repo) : undefined;
    return binding && found?.ok ? { binding, repo: found.repo } : undefined;
  }

  #openFor(repo: RepoConfig, binding: CodeBinding): Promise<Worktree> {
    return binding.mode === 'review'
      ? this.worktrees.openReview(repo, binding.conversationId, binding.branch ?? '')
      : this.worktrees.open(repo, binding.conversationId);
  }

  /** The conversation's worktree as it is now, without opening one. */
  async current(
    conversationId: string,
  ): Promise<{ binding: CodeBinding; repo: RepoConfig; worktree: Worktree } | undefined> {
    const bound = this.#bound(conversationId);
    const worktree = bound && (await this.worktrees.find(bound.repo, conversationId));
    return bound && worktree ? { ...bound, worktree } : undefined;
  }

  /** Removes the conversation's worktree (and the bot's branch); the binding stays for its next turn. */
  async removeWorktree(conversationId: string): Promise<void> {
    const now = await this.current(conversationId);
    if (!now) return;
    await this.worktrees.remove(now.repo, now.worktree);
    await this.#forgetAuthors(now.repo, now.worktree);
  }

  /**
   * Forgets who put content into a removed worktree's change — only once its branch is gone: a
   * branch that outlived its removal is picked up again with its commits, and with its authors.
   */
  async #forgetAuthors(repo: RepoConfig, worktree: Worktree): Promise<void> {
    if (!this.#authors || worktree.review) return;
    const kept = await git(repo.path, ['rev-parse', '--verify', '--quiet', `refs/heads/${worktree.branch}`]).then(
      () => true,
      () => false,
    );
    if (!kept) await this.#authors.forget(worktree);
  }

  /**
   * Removes what belongs to conversations that are gone (`isLive` says no): their worktrees, branches
   * and bindings. Housekeeping runs it, so a crash or an expired conversation leaves nothing behind.
   */
  async sweep(repos: readonly RepoConfig[], isLive: (conversationId: string) => Promise<boolean>): Promise<number> {
    let removed = 0;
    for (const repo of repos)
      removed += await this.worktrees.sweep(repo, isLive, (worktree) => this.#forgetAuthors(repo, worktree));
    const dir = path.join(this.worktrees.root, BINDINGS);
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const file = path.join(dir, name);
      const parsed = CodeBinding.safeParse(parseJson(await readFile(file, 'utf8').catch(() => '')));
      if (parsed.success && (await isLive(parsed.data.conversationId))) continue;
      await rm(file, { force: true });
    }
    return removed;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
