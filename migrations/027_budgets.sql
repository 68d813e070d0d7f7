-- Spend limits (#38, docs/budgets.md). A budget of the policy file is counted per period (a day or a
-- month in its time zone): `spent` is settled model usage, in the budget's unit (USD or tokens), and
-- `allowance` what approvers granted on top of the limit for that period. A model call in flight
-- holds a reservation of its worst case until it settles; one whose lease ran out (its worker died)
-- no longer counts, and housekeeping deletes it.
CREATE TABLE countersign.budget_periods (
  budget text NOT NULL,
  unit text NOT NULL CHECK (unit IN ('usd', 'tokens')),
  period_start timestamptz NOT NULL,
  period_end timestamptz NOT NULL,
  spent numeric NOT NULL DEFAULT 0,
  allowance numeric NOT NULL DEFAULT 0,
  -- Set once, by the settle that crossed the warning level: one warning per period.
  warned_at timestamptz,
  PRIMARY KEY (budget, unit, period_start)
);

CREATE TABLE countersign.budget_reservations (
  id uuid NOT NULL,
  budget text NOT NULL,
  unit text NOT NULL,
  period_start timestamptz NOT NULL,
  amount numeric NOT NULL CHECK (amount >= 0),
  work_item_id uuid,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (id, budget, unit),
  FOREIGN KEY (budget, unit, period_start) REFERENCES countersign.budget_periods ON DELETE CASCADE
);
CREATE INDEX budget_reservations_period ON countersign.budget_reservations (budget, unit, period_start);
CREATE INDEX budget_reservations_work_item ON countersign.budget_reservations (work_item_id);
CREATE INDEX budget_reservations_expiry ON countersign.budget_reservations (expires_at);

-- A refused turn's offer of more room, shown as a button ("Allow $5.00 more today"): an approver
-- other than the requester grants it once, for the period it was refused in.
CREATE TABLE countersign.budget_allowance_offers (
  id uuid PRIMARY KEY,
  budget text NOT NULL,
  unit text NOT NULL,
  period_start timestamptz NOT NULL,
  tz text NOT NULL,
  amount numeric NOT NULL CHECK (amount > 0),
  work_item_id uuid,
  requester jsonb NOT NULL,
  reply jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  granted_by jsonb,
  granted_at timestamptz,
  FOREIGN KEY (budget, unit, period_start) REFERENCES countersign.budget_periods ON DELETE CASCADE
);

ALTER TABLE countersign.approval_audit DROP CONSTRAINT approval_audit_event_check;
ALTER TABLE countersign.approval_audit ADD CONSTRAINT approval_audit_event_check CHECK (event IN (
  'requested', 'click', 'rejected', 'partial', 'consumed', 'executed', 'denied', 'answered', 'refused', 'expired',
  'allowed', 'policy_denied', 'granted', 'grant_used', 'grant_revoked', 'superseded', 'feedback',
  'code_committed', 'merge_requested', 'merged', 'merge_conflict', 'discarded',
  'connected', 'connection_used', 'disconnected', 'connection_refused',
  'schedule_created', 'schedule_run', 'schedule_paused', 'schedule_resumed', 'schedule_deleted',
  'budget_warned', 'budget_refused', 'budget_allowance'));
