-- Per-person connections (#34, docs/connections.md) audit whose account did what: a connection made,
-- used for a call, removed, or a call refused for want of one.
ALTER TABLE countersign.approval_audit DROP CONSTRAINT approval_audit_event_check;
ALTER TABLE countersign.approval_audit ADD CONSTRAINT approval_audit_event_check CHECK (event IN (
  'requested', 'click', 'rejected', 'partial', 'consumed', 'executed', 'denied', 'answered', 'refused', 'expired',
  'allowed', 'policy_denied', 'granted', 'grant_used', 'grant_revoked', 'superseded', 'feedback',
  'code_committed', 'merge_requested', 'merged', 'merge_conflict', 'discarded',
  'connected', 'connection_used', 'disconnected', 'connection_refused'));
