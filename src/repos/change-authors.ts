import type { Queryable } from '../db/pool.ts';
import { personKey, type Requester } from '../core/person.ts';
import {
  authorsOfChange,
  forgetChange,
  insertAuthors,
  recordedContents,
  type AuthorRow,
  type Authorship,
  type ChangeRef,
} from './authors-store.ts';
import { changeContents } from './worktree-contents.ts';
import type { Worktree } from './worktrees.ts';

/** A person behind what a turn wrote, and how. */
export interface Contributor {
  person: Requester;
  how: Authorship;
}

/**
 * Who put content into a change (docs/policy.md, "Who may countersign a merge"). After anything that
 * may have written the worktree — a tool call, a program, the coding CLI, files a person sent — the
 * worktree is compared with what is recorded: every content no one is recorded for yet is recorded
 * for the people behind the turn (its requester, and whoever approved the call). None of a change's
 * people may give its merge the second signature.
 */
export class ChangeAuthors {
  readonly #db: Queryable;

  constructor(db: Queryable) {
    this.#db = db;
  }

  /**
   * Records `people` for every content of the change not recorded yet — and, when the turn ran a
   * program, for the whole change (`WHOLE_CHANGE`): a program can leave a process behind that writes
   * after its turn, where only a later turn's look would see it. Returns the paths they now stand behind.
   */
  async record(
    worktree: Worktree,
    people: readonly Contributor[],
    { workItemId, ranProgram = false }: { workItemId?: string; ranProgram?: boolean } = {},
  ): Promise<string[]> {
    if (worktree.review || people.length === 0) return [];
    const change = changeOf(worktree);
    const rows: AuthorRow[] = [];
    const paths: string[] = [];
    if (ranProgram)
      for (const { person, how } of people)
        rows.push({
          path: WHOLE_CHANGE,
          person: personKey(person),
          how,
          content: 'program',
          ...(workItemId ? { workItemId } : {}),
        });
    const now = await changeContents(worktree.path, worktree.branch, worktree.baseCommit);
    const known = now.size > 0 ? await recordedContents(this.#db, change) : new Map<string, Set<string>>();
    for (const [file, contents] of now) {
      const fresh = [...contents].filter((c) => !known.get(file)?.has(c));
      if (fresh.length === 0) continue;
      paths.push(file);
      for (const content of fresh)
        for (const { person, how } of people)
          rows.push({ path: file, person: personKey(person), how, content, ...(workItemId ? { workItemId } : {}) });
    }
    await insertAuthors(this.#db, change, rows);
    return paths;
  }

  /** Everyone behind any content of the change (`platform:user`): none may countersign its merge. */
  authorsOf(worktree: Pick<Worktree, 'repo' | 'branch'>): Promise<string[]> {
    return authorsOfChange(this.#db, changeOf(worktree));
  }

  /** Forgets a change's authors once its branch is gone (merged or discarded). */
  async forget(worktree: Pick<Worktree, 'repo' | 'branch'>): Promise<void> {
    await forgetChange(this.#db, changeOf(worktree));
  }
}

/** The path of a row that stands for the whole change: git never names a file `.`. */
const WHOLE_CHANGE = '.';

const changeOf = (worktree: Pick<Worktree, 'repo' | 'branch'>): ChangeRef => ({
  repo: worktree.repo,
  branch: worktree.branch,
});
