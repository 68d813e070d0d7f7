-- Feedback identity (#30): a person is a user id *in a workspace* (the Slack team or org, the
-- Discord guild, `@me` in a Discord DM), as everywhere else. Keyed by platform and user id alone, two
-- people with the same id in different workspaces (a Slack Connect guest, another org) shared one
-- vote. One row per (work item, platform, workspace, user) from now on.
ALTER TABLE countersign.turn_feedback ADD COLUMN workspace text NOT NULL DEFAULT '';

-- Rows written before this migration take the workspace of the newest feedback audit row of the same
-- person on the same answer (the actor there carries it); rows without one keep '' (unknown).
UPDATE countersign.turn_feedback f
SET workspace = latest.workspace
FROM (
  SELECT DISTINCT ON (a.detail->>'workItemId', a.actor->>'platform', a.actor->>'userId')
    a.detail->>'workItemId' AS work_item_id,
    a.actor->>'platform' AS platform,
    a.actor->>'userId' AS user_id,
    a.actor->>'workspace' AS workspace
  FROM countersign.approval_audit a
  WHERE a.event = 'feedback' AND a.actor->>'workspace' IS NOT NULL
  ORDER BY a.detail->>'workItemId', a.actor->>'platform', a.actor->>'userId', a.id DESC
) latest
WHERE latest.work_item_id = f.work_item_id::text
  AND latest.platform = f.platform
  AND latest.user_id = f.user_id;

ALTER TABLE countersign.turn_feedback DROP CONSTRAINT turn_feedback_pkey;
ALTER TABLE countersign.turn_feedback ADD PRIMARY KEY (work_item_id, platform, workspace, user_id);
