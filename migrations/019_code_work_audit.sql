-- Code work (#33, docs/code-work.md) audits what happened to a change: committed on its worktree
-- branch, a merge asked for on a change card, merged (with the commit), refused for a conflict, or
-- discarded.
ALTER TABLE countersign.approval_audit DROP CONSTRAINT approval_audit_event_check;
ALTER TABLE countersign.approval_audit ADD CONSTRAINT approval_audit_event_check CHECK (event IN (
  'requested', 'click', 'rejected', 'partial', 'consumed', 'executed', 'denied', 'answered', 'refused', 'expired',
  'allowed', 'policy_denied', 'granted', 'grant_used', 'grant_revoked', 'superseded', 'feedback',
  'code_committed', 'merge_requested', 'merged', 'merge_conflict', 'discarded'));
