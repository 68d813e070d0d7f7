-- Feedback on answers (#21): a person's 👍/👎 on a turn's final answer. One vote per person and turn;
-- voting again changes it. Every vote is also an audit row ('feedback'), so `countersign audit`
-- exports it with the rest.
CREATE TABLE countersign.turn_feedback (
  work_item_id uuid NOT NULL,
  platform text NOT NULL,
  user_id text NOT NULL,
  vote text NOT NULL CHECK (vote IN ('up', 'down')),
  voted_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (work_item_id, platform, user_id)
);

ALTER TABLE countersign.approval_audit DROP CONSTRAINT approval_audit_event_check;
ALTER TABLE countersign.approval_audit ADD CONSTRAINT approval_audit_event_check CHECK (event IN (
  'requested', 'click', 'rejected', 'partial', 'consumed', 'executed', 'denied', 'answered', 'refused', 'expired',
  'allowed', 'policy_denied', 'granted', 'grant_used', 'grant_revoked', 'superseded', 'feedback'));
