-- Workspace changes nobody but their requester approved (#30, taint). A write that one person's
-- click (or a rule, or a grant) let through is recorded here; a later program run in the same
-- workspace then needs a second person's countersignature, and that person's card names these
-- files. A countersigned run that executes clears what its card named (rows changed before the
-- card was requested); rows are the record until then. Owner: src/approval/taint-store.ts.
CREATE TABLE countersign.workspace_changes (
  id bigserial PRIMARY KEY,
  workspace text NOT NULL,
  path text NOT NULL,
  tool text NOT NULL,
  work_item_id uuid,
  changed_by jsonb NOT NULL,
  changed_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX workspace_changes_by_workspace ON countersign.workspace_changes (workspace, changed_at);
