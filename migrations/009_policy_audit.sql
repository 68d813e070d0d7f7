-- The policy (#18) records calls it decided without a card: 'allowed' (a rule let it run) and
-- 'policy_denied' (a rule refused it). The audit export filters by time, so `at` gets an index.
ALTER TABLE countersign.approval_audit DROP CONSTRAINT approval_audit_event_check;
ALTER TABLE countersign.approval_audit ADD CONSTRAINT approval_audit_event_check CHECK (event IN (
  'requested', 'click', 'rejected', 'partial', 'consumed', 'executed', 'denied', 'answered', 'refused', 'expired',
  'allowed', 'policy_denied'));
CREATE INDEX approval_audit_at ON countersign.approval_audit (at);
