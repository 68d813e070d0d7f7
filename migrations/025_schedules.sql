-- Scheduled work from chat (#36, docs/schedules.md): a schedule belongs to the person who made it and
-- runs where it was made; each due slot makes one work item, at most once (the runs' primary key).
CREATE TABLE countersign.schedules (
  id uuid PRIMARY KEY,
  -- The owner (a Requester) and the key the per-person limit counts by (platform:user).
  owner jsonb NOT NULL,
  owner_key text NOT NULL,
  -- Where it was made (a ReplyTarget) and the conversation its runs join.
  place jsonb NOT NULL,
  conversation_id text NOT NULL,
  -- WHEN as the person wrote it, and as read: a cron pattern in a time zone, an interval from
  -- `starts_at`, or one instant (`starts_at`).
  when_text text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('cron', 'every', 'once')),
  pattern text,
  time_zone text NOT NULL DEFAULT 'UTC',
  every_seconds integer CHECK (every_seconds > 0),
  starts_at timestamptz,
  task text NOT NULL,
  background boolean NOT NULL DEFAULT false,
  catch_up text NOT NULL DEFAULT 'latest' CHECK (catch_up IN ('latest', 'none')),
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'finished')),
  paused_reason text,
  -- The next slot; NULL once a one-off ran.
  next_run_at timestamptz,
  consecutive_failures integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX schedules_due ON countersign.schedules (next_run_at) WHERE status = 'active';
CREATE INDEX schedules_owner ON countersign.schedules (owner_key);

-- One row per slot a schedule ran (or skipped): the key that makes a slot run once across every
-- worker process. The history a person sees is the newest rows.
CREATE TABLE countersign.schedule_runs (
  schedule_id uuid NOT NULL REFERENCES countersign.schedules (id) ON DELETE CASCADE,
  slot timestamptz NOT NULL,
  work_item_id uuid,
  outcome text NOT NULL DEFAULT 'running'
    CHECK (outcome IN ('running', 'done', 'failed', 'expired', 'cancelled', 'refused')),
  detail text,
  -- Where the run answered, for the history's link.
  reply jsonb,
  enqueued_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  PRIMARY KEY (schedule_id, slot)
);
CREATE INDEX schedule_runs_running ON countersign.schedule_runs (enqueued_at) WHERE outcome = 'running';

-- A run's outcome follows its approval continuations (each carries the run's item id as its
-- approvalContextId): finding the newest one must not scan every work item.
CREATE INDEX work_items_approval_context ON countersign.work_items ((item->'input'->>'approvalContextId'));

ALTER TABLE countersign.approval_audit DROP CONSTRAINT approval_audit_event_check;
ALTER TABLE countersign.approval_audit ADD CONSTRAINT approval_audit_event_check CHECK (event IN (
  'requested', 'click', 'rejected', 'partial', 'consumed', 'executed', 'denied', 'answered', 'refused', 'expired',
  'allowed', 'policy_denied', 'granted', 'grant_used', 'grant_revoked', 'superseded', 'feedback',
  'code_committed', 'merge_requested', 'merged', 'merge_conflict', 'discarded',
  'connected', 'connection_used', 'disconnected', 'connection_refused',
  'schedule_created', 'schedule_run', 'schedule_paused', 'schedule_resumed', 'schedule_deleted'));
