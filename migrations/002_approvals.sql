-- Approval envelopes: single-use, nonce-bound records of exactly which tool calls a person was asked
-- to approve, written in one transaction with the parked turn.

CREATE TABLE countersign.approval_envelopes (
  id uuid PRIMARY KEY,
  -- Random, URL-safe, >= 128 bits. The only thing a button carries besides the decision.
  nonce text NOT NULL UNIQUE,
  kind text NOT NULL CHECK (kind IN ('tools', 'question')),
  -- Stable across all continuations of one turn (the id of the turn's first work item).
  context_id text NOT NULL,
  work_item_id uuid NOT NULL,
  conversation_id text NOT NULL,
  requester jsonb NOT NULL,
  approvers jsonb NOT NULL,
  two_person_rule boolean NOT NULL,
  -- The calls in canonical JSON, and sha256 of exactly that text.
  calls text NOT NULL,
  plan_hash text NOT NULL,
  scope jsonb NOT NULL,
  scope_hash text NOT NULL,
  -- The parked turn, resumed by the continuation.
  turn_state jsonb NOT NULL,
  reply jsonb NOT NULL,
  card_message_id text,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'consumed', 'expired')),
  -- Per-call decisions collected from single-call buttons before the last one consumes the nonce.
  partial_decisions jsonb NOT NULL DEFAULT '[]',
  decisions jsonb,
  decided_by jsonb,
  decided_at timestamptz,
  continuation_work_item uuid,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX approval_envelopes_pending_expiry ON countersign.approval_envelopes (expires_at) WHERE status = 'pending';
CREATE INDEX approval_envelopes_context ON countersign.approval_envelopes (context_id);

-- Every request, click, rejection (with its reason), consumption, execution and expiry.
CREATE TABLE countersign.approval_audit (
  id bigserial PRIMARY KEY,
  envelope_id uuid,
  -- The first characters of the nonce: enough to correlate, useless to replay.
  nonce_prefix text,
  event text NOT NULL CHECK (event IN ('requested', 'click', 'rejected', 'partial', 'consumed', 'executed', 'denied', 'answered', 'refused', 'expired')),
  actor jsonb,
  reason text,
  detail jsonb,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX approval_audit_envelope ON countersign.approval_audit (envelope_id, id);
