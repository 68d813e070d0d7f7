-- The taint from the files themselves (#47). One-person content is what differs on disk from a
-- baseline: the state the last countersigned program run left (or the clean checkout of a worktree,
-- or an empty workspace), plus the writes a second person approved, each with its content hash.
-- One row per workspace, keyed by a name that does not depend on a process's working directory
-- (`agent-workspace`, or a worktree's repository, branch and base commit). `entries`: path → entry
-- (`f:<sha256>`, `x:<sha256>`, `l:<sha256 of the link target>`, `o:<kind>`; src/approval/workspace-scan.ts).
-- `version` lets a process keep the entries it read until they change. Owner: src/approval/taint-store.ts.
CREATE TABLE countersign.workspace_baselines (
  workspace text PRIMARY KEY,
  entries jsonb NOT NULL,
  version bigint NOT NULL DEFAULT 1,
  taken_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  reason text NOT NULL
);
-- Writes recorded one by one (016, countersign.workspace_changes) no longer decide anything: the
-- disk does. That table stays until no worker of an older version can still be running (a rolling
-- deploy would otherwise fail their allowed writes); a later migration drops it.
