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

/** The distinct paths changed in a workspace, oldest change first. */
export async function changedPaths(db: Queryable, workspace: string): Promise<string[]> {
  const { rows } = await db.query<{ path: string }>(
    `SELECT path FROM countersign.workspace_changes WHERE workspace = $1
     GROUP BY path ORDER BY min(changed_at), path`,
    [workspace],
  );
  return rows.map((r) => r.path);
}

/** Forgets the changes a countersigned run's card named: those recorded before it was requested. */
export async function clearChangesBefore(db: Queryable, workspace: string, before: Date): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM countersign.workspace_changes WHERE workspace = $1 AND changed_at <= $2`,
    [workspace, before],
  );
  return rowCount ?? 0;
}
