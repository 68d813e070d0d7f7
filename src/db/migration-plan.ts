import { migrationNumber, MigrationsRefused, type MigrationFile, type MigrationFiles } from './migration-files.ts';

/**
 * Decides, from this release's migrations and the ones the database has applied, which to apply —
 * or refuses, in one line, to use a database this release does not know. Pure: migrate.ts reads
 * both sides and applies the answer.
 */

/** A row of countersign.schema_migrations. */
export interface AppliedMigration {
  id: number;
  name: string;
  compatible: boolean;
}

export interface MigrationPlan {
  /** This release's migrations the database lacks, in the order to apply them. */
  pending: MigrationFile[];
  /** Migrations newer than this release, each marked compatible: the release runs, and says so. */
  newerCompatible: AppliedMigration[];
}

export function planMigrations(
  { files, retired }: MigrationFiles,
  applied: readonly AppliedMigration[],
): MigrationPlan {
  const latestKnown = Math.max(0, ...files.map((f) => f.id));
  const newer = applied.filter((m) => m.id > latestKnown).sort((a, b) => a.id - b.id);
  // A release never runs against a schema it does not know: a newer migration may have dropped or
  // changed what this release reads and writes. The one exception is a migration that says it did not.
  const unknown = newer.filter((m) => !m.compatible).at(-1);
  if (unknown)
    throw new MigrationsRefused(
      `the database has migration ${migrationNumber(unknown.id)} (${unknown.name}), newer than this release's ${migrationNumber(latestKnown)}: run a release that has it; this one does not know the schema it made`,
    );

  const byId = new Map(files.map((f) => [f.id, f]));
  const appliedIds = new Set<number>();
  for (const m of applied) {
    appliedIds.add(m.id);
    if (m.id > latestKnown) continue;
    if (retired.has(m.id))
      throw new MigrationsRefused(
        `the database has migration ${m.name}, whose number this release lists as retired: this release was not built from the history that database ran`,
      );
    const file = byId.get(m.id);
    if (file && file.name !== m.name)
      throw new MigrationsRefused(
        `migration ${migrationNumber(m.id)} was applied as ${m.name}, but this release names it ${file.name}: an applied migration is never renamed or renumbered; restore its name`,
      );
  }

  const latestApplied = Math.max(0, ...appliedIds);
  const pending = files.filter((f) => !appliedIds.has(f.id));
  // Migrations run in number order, so the schema every database reaches is the one the numbers
  // describe. A file numbered below one already applied (two branches merged) would run after it.
  const outOfOrder = pending.find((f) => f.id < latestApplied);
  if (outOfOrder)
    throw new MigrationsRefused(
      `migration ${outOfOrder.name} is not applied, but the database already has ${migrationNumber(latestApplied)}: it would run out of order; renumber it above the newest migration`,
    );
  return { pending, newerCompatible: newer };
}
