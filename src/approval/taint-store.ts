import type { Queryable } from '../db/pool.ts';

/**
 * SQL of countersign.workspace_baselines (migration 035): per workspace, the content a second person
 * vouched for — what the last countersigned program run left, and the writes a second person
 * approved — as path → entry (src/approval/workspace-scan.ts). One statement per function.
 */

/** A workspace's baseline as stored: entries by path, and a version that changes with every write. */
export interface StoredBaseline {
  entries: Record<string, string>;
  version: string;
}

/** The version of a workspace's baseline, or undefined when none is stored yet. */
export async function baselineVersion(db: Queryable, workspace: string): Promise<string | undefined> {
  const { rows } = await db.query<{ version: string }>(
    `SELECT version::text AS version FROM countersign.workspace_baselines WHERE workspace = $1`,
    [workspace],
  );
  return rows[0]?.version;
}

/** A workspace's baseline, or undefined when none is stored yet. */
export async function readBaseline(db: Queryable, workspace: string): Promise<StoredBaseline | undefined> {
  const { rows } = await db.query<StoredBaseline>(
    `SELECT entries, version::text AS version FROM countersign.workspace_baselines WHERE workspace = $1`,
    [workspace],
  );
  return rows[0];
}

/** Replaces a workspace's whole baseline (after a countersigned run: the state it left). */
export async function replaceBaseline(
  db: Queryable,
  workspace: string,
  entries: Record<string, string>,
  reason: string,
): Promise<void> {
  await db.query(
    `INSERT INTO countersign.workspace_baselines (workspace, entries, reason) VALUES ($1, $2::jsonb, $3)
     ON CONFLICT (workspace) DO UPDATE SET entries = EXCLUDED.entries, reason = EXCLUDED.reason,
       version = countersign.workspace_baselines.version + 1, taken_at = clock_timestamp()`,
    [workspace, JSON.stringify(entries), reason],
  );
}

/**
 * Changes some paths of a stored baseline (a write a second person approved): `set` entries are put,
 * `removed` paths dropped. `initial` is the baseline to start from when none is stored yet. One
 * statement, so two approved writes at once both land.
 */
export async function amendBaseline(
  db: Queryable,
  workspace: string,
  change: { set: Record<string, string>; removed: readonly string[]; initial: Record<string, string> },
  reason: string,
): Promise<void> {
  await db.query(
    `INSERT INTO countersign.workspace_baselines (workspace, entries, reason)
     VALUES ($1, ($2::jsonb || $3::jsonb) - $4::text[], $5)
     ON CONFLICT (workspace) DO UPDATE
       SET entries = (countersign.workspace_baselines.entries || $3::jsonb) - $4::text[], reason = EXCLUDED.reason,
         version = countersign.workspace_baselines.version + 1, taken_at = clock_timestamp()`,
    [workspace, JSON.stringify(change.initial), JSON.stringify(change.set), [...change.removed], reason],
  );
}
