-- Standing grants (#19): "Always allow here". A grant lets calls of one tool, with the same
-- arguments (or the narrow patterns the policy defines), in one channel or DM, run without a card
-- until it expires or is revoked. Rows are never deleted by use: they are the record of who
-- allowed what, and the audit log names the grant each covered call ran under.
CREATE TABLE countersign.grants (
  id uuid PRIMARY KEY,
  tool text NOT NULL,
  -- {argument: {"eq": value} | {"glob": pattern}}: every argument of a covered call, no more, no fewer.
  args jsonb NOT NULL,
  platform text NOT NULL,
  workspace text NOT NULL DEFAULT '',
  channel text NOT NULL,
  dm boolean NOT NULL,
  -- What the card said the grant covers, shown again when it is listed.
  covers text NOT NULL,
  rule text NOT NULL,
  created_by jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  envelope_id uuid,
  revoked_at timestamptz,
  revoked_by jsonb,
  uses integer NOT NULL DEFAULT 0,
  last_used_at timestamptz
);
CREATE INDEX grants_live ON countersign.grants (platform, workspace, channel, tool) WHERE revoked_at IS NULL;

ALTER TABLE countersign.approval_audit DROP CONSTRAINT approval_audit_event_check;
ALTER TABLE countersign.approval_audit ADD CONSTRAINT approval_audit_event_check CHECK (event IN (
  'requested', 'click', 'rejected', 'partial', 'consumed', 'executed', 'denied', 'answered', 'refused', 'expired',
  'allowed', 'policy_denied', 'granted', 'grant_used', 'grant_revoked'));
