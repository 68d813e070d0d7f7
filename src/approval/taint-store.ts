import type { Queryable } from '../db/pool.ts';
import type { Requester } from '../core/person.ts';

/**
 * SQL of countersign.workspace_changes (migration 016): the workspace files changed on one person's
 * say since the last countersigned run. One statement per function; times are the database's.
 */

export interface WorkspaceChange {
  workspace: string;
  path: string;
  tool: string;
  workItemId: string;
  by: Requester;
}

export async function insertWorkspaceChanges(db: Queryable, changes: readonly WorkspaceChange[]): Promise<void> {
  if (changes.length === 0) return;
  await db.query(
    `INSERT INTO countersign.workspace_changes (workspace, path, tool, work_item_id, changed_by)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::uuid[], $5::jsonb[])`,
    [
      changes.map((c) => c.workspace),
      changes.map((c) => c.path),
      changes.map((c) => c.tool),
      changes.map((c) => c.workItemId),
      changes.map((c) => JSON.stringify(c.by)),
    ],
  );
}

export interface WorkspaceChanges {
  /** The distinct paths, newest change first (what a card names first). */
  paths: string[];
  /** Every change's id: a countersignature vouches for exactly these. */
  ids: number[];
}

/** The paths changed in a workspace, and the changes' ids. */
export async function changedPaths(db: Queryable, workspace: string): Promise<WorkspaceChanges> {
  const { rows } = await db.query<{ path: string; ids: string[] }>(
    `SELECT path, array_agg(id ORDER BY id) AS ids FROM countersign.workspace_changes WHERE workspace = $1
     GROUP BY path ORDER BY max(id) DESC`,
    [workspace],
  );
  return { paths: rows.map((r) => r.path), ids: rows.flatMap((r) => r.ids.map(Number)).sort((a, b) => a - b) };
}

/**
 * Forgets the changes a countersigned run's card named, by id: a change recorded after the card was
 * drawn (or committed late with an older id) stays.
 */
export async function clearChanges(db: Queryable, workspace: string, ids: readonly number[]): Promise<number> {
  if (ids.length === 0) return 0;
  const { rowCount } = await db.query(
    `DELETE FROM countersign.workspace_changes WHERE workspace = $1 AND id = ANY($2::bigint[])`,
    [workspace, ids],
  );
  return rowCount ?? 0;
}
