import type { Queryable } from '../db/pool.ts';

/**
 * SQL of countersign.change_authors (migration 036): who put which content of which file into a
 * change, recorded as it is written. One statement per function.
 */

/** How a person is behind a file's content: they asked for the turn, or approved the call. */
export type Authorship = 'requested' | 'approved';

/** One person behind one content of one path of a change. */
export interface AuthorRow {
  path: string;
  /** `platform:user`, as cards and envelopes name people. */
  person: string;
  how: Authorship;
  /** The file as it was recorded: git mode and object id, or `deleted`. */
  content: string;
  workItemId?: string;
}

/** A change: its repository and branch. */
export interface ChangeRef {
  repo: string;
  branch: string;
}

/** Records the rows; a person already recorded for the same content of a path is not recorded twice. */
export async function insertAuthors(db: Queryable, change: ChangeRef, rows: readonly AuthorRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `INSERT INTO countersign.change_authors (repo, branch, path, person, how, content, work_item_id)
     SELECT $1, $2, r.path, r.person, r.how, r.content, r.work_item_id
       FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::uuid[])
            AS r(path, person, how, content, work_item_id)
     ON CONFLICT (repo, branch, path, content, person, how) DO NOTHING`,
    [
      change.repo,
      change.branch,
      rows.map((r) => r.path),
      rows.map((r) => r.person),
      rows.map((r) => r.how),
      rows.map((r) => r.content),
      rows.map((r) => r.workItemId ?? null),
    ],
  );
}

/** Every content recorded for each path of the change: what is on disk now and in none of them is new. */
export async function recordedContents(db: Queryable, change: ChangeRef): Promise<Map<string, Set<string>>> {
  const { rows } = await db.query<{ path: string; contents: string[] }>(
    `SELECT path, array_agg(DISTINCT content) AS contents FROM countersign.change_authors
      WHERE repo = $1 AND branch = $2 GROUP BY path`,
    [change.repo, change.branch],
  );
  return new Map(rows.map((r) => [r.path, new Set(r.contents)]));
}

/** The people behind any content of the change (`platform:user`), sorted. */
export async function authorsOfChange(db: Queryable, change: ChangeRef): Promise<string[]> {
  const { rows } = await db.query<{ person: string }>(
    `SELECT DISTINCT person FROM countersign.change_authors WHERE repo = $1 AND branch = $2 ORDER BY person`,
    [change.repo, change.branch],
  );
  return rows.map((r) => r.person);
}

/** Forgets a change's authors, once its branch is gone (merged or discarded). */
export async function forgetChange(db: Queryable, change: ChangeRef): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM countersign.change_authors WHERE repo = $1 AND branch = $2`, [
    change.repo,
    change.branch,
  ]);
  return rowCount ?? 0;
}
