-- The countersign schema after every migration in this folder, read from pg_catalog by
-- test/db/schema-snapshot.test.ts, which fails when the migrations build anything else. It
-- describes; it is not run (the numbered files are). Do not edit it by hand: after changing
-- migrations, regenerate it with
--   UPDATE_SCHEMA_SNAPSHOT=1 npx vitest run test/db/schema-snapshot.test.ts
-- and commit it with the migration.

-- Enum types

-- (none)

-- Sequences

CREATE SEQUENCE countersign.approval_audit_id_seq AS bigint INCREMENT 1 START 1 OWNED BY countersign.approval_audit.id;

CREATE SEQUENCE countersign.change_authors_id_seq AS bigint INCREMENT 1 START 1 OWNED BY countersign.change_authors.id;

CREATE SEQUENCE countersign.messages_id_seq AS bigint INCREMENT 1 START 1 OWNED BY countersign.messages.id;

CREATE SEQUENCE countersign.reply_outbox_seq_seq AS bigint INCREMENT 1 START 1 OWNED BY countersign.reply_outbox.seq;

CREATE SEQUENCE countersign.work_items_seq_seq AS bigint INCREMENT 1 START 1 OWNED BY countersign.work_items.seq;

CREATE SEQUENCE countersign.workspace_changes_id_seq AS bigint INCREMENT 1 START 1 OWNED BY countersign.workspace_changes.id;

-- Tables

CREATE TABLE countersign.approval_audit (
  id bigint NOT NULL DEFAULT nextval('countersign.approval_audit_id_seq'::regclass),
  envelope_id uuid,
  nonce_prefix text,
  event text NOT NULL,
  actor jsonb,
  reason text,
  detail jsonb,
  at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE countersign.approval_audit_budget (
  actor text NOT NULL,
  window_start timestamp with time zone NOT NULL,
  written integer NOT NULL,
  suppressed integer NOT NULL
);

CREATE TABLE countersign.approval_envelopes (
  id uuid NOT NULL,
  nonce text NOT NULL,
  kind text NOT NULL,
  context_id text NOT NULL,
  work_item_id uuid NOT NULL,
  conversation_id text NOT NULL,
  requester jsonb NOT NULL,
  approvers jsonb NOT NULL,
  two_person_rule boolean NOT NULL,
  calls text NOT NULL,
  plan_hash text NOT NULL,
  scope jsonb NOT NULL,
  scope_hash text NOT NULL,
  turn_state jsonb NOT NULL,
  reply jsonb NOT NULL,
  card_message_id text,
  status text NOT NULL DEFAULT 'pending'::text,
  partial_decisions jsonb NOT NULL DEFAULT '[]'::jsonb,
  decisions jsonb,
  decided_by jsonb,
  decided_at timestamp with time zone,
  continuation_work_item uuid,
  expires_at timestamp with time zone NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  card_copies jsonb NOT NULL DEFAULT '[]'::jsonb,
  withdrawn_messages jsonb
);

CREATE TABLE countersign.budget_allowance_offers (
  id uuid NOT NULL,
  budget text NOT NULL,
  unit text NOT NULL,
  period_start timestamp with time zone NOT NULL,
  tz text NOT NULL,
  amount numeric NOT NULL,
  work_item_id uuid,
  requester jsonb NOT NULL,
  reply jsonb NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  granted_by jsonb,
  granted_at timestamp with time zone
);

CREATE TABLE countersign.budget_periods (
  budget text NOT NULL,
  unit text NOT NULL,
  period_start timestamp with time zone NOT NULL,
  period_end timestamp with time zone NOT NULL,
  spent numeric NOT NULL DEFAULT 0,
  allowance numeric NOT NULL DEFAULT 0,
  warned_at timestamp with time zone,
  reserved numeric NOT NULL DEFAULT 0
);

CREATE TABLE countersign.budget_reservations (
  id uuid NOT NULL,
  budget text NOT NULL,
  unit text NOT NULL,
  period_start timestamp with time zone NOT NULL,
  amount numeric NOT NULL,
  work_item_id uuid,
  expires_at timestamp with time zone NOT NULL,
  process_id text,
  spent_if_lost boolean NOT NULL DEFAULT false
);

CREATE TABLE countersign.change_authors (
  id bigint NOT NULL DEFAULT nextval('countersign.change_authors_id_seq'::regclass),
  repo text NOT NULL,
  branch text NOT NULL,
  path text NOT NULL,
  person text NOT NULL,
  how text NOT NULL,
  content text NOT NULL,
  work_item_id uuid,
  recorded_at timestamp with time zone NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE countersign.connections (
  platform text NOT NULL,
  user_id text NOT NULL,
  workspace text NOT NULL DEFAULT ''::text,
  server text NOT NULL,
  sealed_tokens text NOT NULL,
  account_name text,
  connected_at timestamp with time zone NOT NULL DEFAULT now(),
  last_used_at timestamp with time zone,
  expires_at timestamp with time zone
);

CREATE TABLE countersign.conversation_summaries (
  conversation_id text NOT NULL,
  through_message_id bigint NOT NULL,
  summary jsonb NOT NULL,
  compactions integer NOT NULL DEFAULT 1,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE countersign.conversations (
  id text NOT NULL,
  platform text NOT NULL,
  active_work_item uuid,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  last_activity_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE countersign.grants (
  id uuid NOT NULL,
  tool text NOT NULL,
  args jsonb NOT NULL,
  platform text NOT NULL,
  workspace text NOT NULL DEFAULT ''::text,
  channel text NOT NULL,
  dm boolean NOT NULL,
  covers text NOT NULL,
  rule text NOT NULL,
  created_by jsonb NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  expires_at timestamp with time zone NOT NULL,
  envelope_id uuid,
  revoked_at timestamp with time zone,
  revoked_by jsonb,
  uses integer NOT NULL DEFAULT 0,
  last_used_at timestamp with time zone
);

CREATE TABLE countersign.inbound_events (
  event_id text NOT NULL,
  received_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE countersign.messages (
  id bigint NOT NULL DEFAULT nextval('countersign.messages_id_seq'::regclass),
  conversation_id text NOT NULL,
  work_item_id uuid,
  message jsonb NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE countersign.model_rounds (
  work_item_id uuid NOT NULL,
  round integer NOT NULL,
  conversation_id text NOT NULL,
  provider text NOT NULL,
  model text NOT NULL,
  input_tokens integer NOT NULL,
  output_tokens integer NOT NULL,
  cache_read_tokens integer NOT NULL,
  cache_write_tokens integer NOT NULL,
  fallbacks jsonb NOT NULL DEFAULT '[]'::jsonb,
  created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE countersign.oauth_clients (
  server text NOT NULL,
  client_id text NOT NULL,
  sealed_client text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE countersign.oauth_states (
  state_hash text NOT NULL,
  platform text NOT NULL,
  user_id text NOT NULL,
  workspace text NOT NULL DEFAULT ''::text,
  server text NOT NULL,
  work_item_id uuid,
  sealed_code_verifier text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  expires_at timestamp with time zone NOT NULL,
  used_at timestamp with time zone,
  authorization_url text,
  person_label text,
  browser_hash text
);

CREATE TABLE countersign.rate_buckets (
  key text NOT NULL,
  tokens double precision NOT NULL,
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE countersign.reply_outbox (
  seq bigint NOT NULL DEFAULT nextval('countersign.reply_outbox_seq_seq'::regclass),
  work_item_id uuid NOT NULL,
  target jsonb NOT NULL,
  reply_state jsonb NOT NULL,
  text text NOT NULL,
  buttons jsonb NOT NULL DEFAULT '[]'::jsonb,
  announce jsonb NOT NULL,
  locked_by text,
  attempts integer NOT NULL DEFAULT 0,
  available_at timestamp with time zone NOT NULL DEFAULT now(),
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  after_work_item uuid
);

CREATE TABLE countersign.schedule_runs (
  schedule_id uuid NOT NULL,
  slot timestamp with time zone NOT NULL,
  work_item_id uuid,
  outcome text NOT NULL DEFAULT 'running'::text,
  detail text,
  reply jsonb,
  enqueued_at timestamp with time zone NOT NULL DEFAULT now(),
  finished_at timestamp with time zone,
  link text
);

CREATE TABLE countersign.schedules (
  id uuid NOT NULL,
  owner jsonb NOT NULL,
  owner_key text NOT NULL,
  place jsonb NOT NULL,
  conversation_id text NOT NULL,
  when_text text NOT NULL,
  kind text NOT NULL,
  pattern text,
  time_zone text NOT NULL DEFAULT 'UTC'::text,
  every_seconds integer,
  starts_at timestamp with time zone,
  task text NOT NULL,
  background boolean NOT NULL DEFAULT false,
  catch_up text NOT NULL DEFAULT 'latest'::text,
  status text NOT NULL DEFAULT 'active'::text,
  paused_reason text,
  next_run_at timestamp with time zone,
  consecutive_failures integer NOT NULL DEFAULT 0,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE countersign.schema_migrations (
  name text NOT NULL,
  applied_at timestamp with time zone NOT NULL DEFAULT now(),
  id integer,
  compatible boolean NOT NULL DEFAULT false
);

CREATE TABLE countersign.tool_executions (
  work_item_id uuid NOT NULL,
  tool_call_id text NOT NULL,
  tool text NOT NULL,
  args jsonb NOT NULL,
  status text NOT NULL,
  result jsonb,
  started_at timestamp with time zone NOT NULL DEFAULT now(),
  finished_at timestamp with time zone
);

CREATE TABLE countersign.turn_checkpoints (
  work_item_id uuid NOT NULL,
  format_version integer NOT NULL,
  round integer NOT NULL,
  state jsonb NOT NULL,
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE countersign.turn_feedback (
  work_item_id uuid NOT NULL,
  platform text NOT NULL,
  user_id text NOT NULL,
  vote text NOT NULL,
  voted_at timestamp with time zone NOT NULL DEFAULT now(),
  workspace text NOT NULL DEFAULT ''::text
);

CREATE TABLE countersign.work_items (
  id uuid NOT NULL,
  conversation_id text NOT NULL,
  seq bigint NOT NULL DEFAULT nextval('countersign.work_items_seq_seq'::regclass),
  type text NOT NULL,
  priority integer NOT NULL,
  status text NOT NULL DEFAULT 'queued'::text,
  item jsonb NOT NULL,
  result jsonb,
  error text,
  attempts integer NOT NULL DEFAULT 0,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  started_at timestamp with time zone,
  finished_at timestamp with time zone,
  stop_requested_at timestamp with time zone,
  stopped_by jsonb
);

CREATE TABLE countersign.worker_processes (
  id text NOT NULL,
  hostname text NOT NULL,
  pid integer NOT NULL,
  role text NOT NULL,
  started_at timestamp with time zone NOT NULL DEFAULT now(),
  last_seen_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE countersign.worker_slots (
  worker_id text NOT NULL,
  process_id text NOT NULL
);

CREATE TABLE countersign.workspace_baselines (
  workspace text NOT NULL,
  entries jsonb NOT NULL,
  version bigint NOT NULL DEFAULT 1,
  taken_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
  reason text NOT NULL
);

CREATE TABLE countersign.workspace_changes (
  id bigint NOT NULL DEFAULT nextval('countersign.workspace_changes_id_seq'::regclass),
  workspace text NOT NULL,
  path text NOT NULL,
  tool text NOT NULL,
  work_item_id uuid,
  changed_by jsonb NOT NULL,
  changed_at timestamp with time zone NOT NULL DEFAULT clock_timestamp()
);

-- Constraints

ALTER TABLE countersign.approval_audit ADD CONSTRAINT approval_audit_event_check CHECK ((event = ANY (ARRAY['requested'::text, 'click'::text, 'rejected'::text, 'partial'::text, 'consumed'::text, 'executed'::text, 'denied'::text, 'answered'::text, 'refused'::text, 'expired'::text, 'allowed'::text, 'policy_denied'::text, 'granted'::text, 'grant_used'::text, 'grant_revoked'::text, 'superseded'::text, 'feedback'::text, 'code_committed'::text, 'merge_requested'::text, 'merged'::text, 'merge_conflict'::text, 'discarded'::text, 'connected'::text, 'connection_used'::text, 'disconnected'::text, 'connection_refused'::text, 'schedule_created'::text, 'schedule_run'::text, 'schedule_paused'::text, 'schedule_resumed'::text, 'schedule_deleted'::text, 'budget_warned'::text, 'budget_refused'::text, 'budget_allowance'::text])));

ALTER TABLE countersign.approval_audit ADD CONSTRAINT approval_audit_pkey PRIMARY KEY (id);

ALTER TABLE countersign.approval_audit_budget ADD CONSTRAINT approval_audit_budget_pkey PRIMARY KEY (actor, window_start);

ALTER TABLE countersign.approval_envelopes ADD CONSTRAINT approval_envelopes_kind_check CHECK ((kind = ANY (ARRAY['tools'::text, 'question'::text])));

ALTER TABLE countersign.approval_envelopes ADD CONSTRAINT approval_envelopes_nonce_key UNIQUE (nonce);

ALTER TABLE countersign.approval_envelopes ADD CONSTRAINT approval_envelopes_pkey PRIMARY KEY (id);

ALTER TABLE countersign.approval_envelopes ADD CONSTRAINT approval_envelopes_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'consumed'::text, 'expired'::text, 'superseded'::text])));

ALTER TABLE countersign.budget_allowance_offers ADD CONSTRAINT budget_allowance_offers_amount_check CHECK ((amount > (0)::numeric));

ALTER TABLE countersign.budget_allowance_offers ADD CONSTRAINT budget_allowance_offers_budget_unit_period_start_fkey FOREIGN KEY (budget, unit, period_start) REFERENCES countersign.budget_periods(budget, unit, period_start) ON DELETE CASCADE;

ALTER TABLE countersign.budget_allowance_offers ADD CONSTRAINT budget_allowance_offers_pkey PRIMARY KEY (id);

ALTER TABLE countersign.budget_periods ADD CONSTRAINT budget_periods_pkey PRIMARY KEY (budget, unit, period_start);

ALTER TABLE countersign.budget_periods ADD CONSTRAINT budget_periods_unit_check CHECK ((unit = ANY (ARRAY['usd'::text, 'tokens'::text])));

ALTER TABLE countersign.budget_reservations ADD CONSTRAINT budget_reservations_amount_check CHECK ((amount >= (0)::numeric));

ALTER TABLE countersign.budget_reservations ADD CONSTRAINT budget_reservations_budget_unit_period_start_fkey FOREIGN KEY (budget, unit, period_start) REFERENCES countersign.budget_periods(budget, unit, period_start) ON DELETE CASCADE;

ALTER TABLE countersign.budget_reservations ADD CONSTRAINT budget_reservations_pkey PRIMARY KEY (id, budget, unit);

ALTER TABLE countersign.change_authors ADD CONSTRAINT change_authors_how_check CHECK ((how = ANY (ARRAY['requested'::text, 'approved'::text])));

ALTER TABLE countersign.change_authors ADD CONSTRAINT change_authors_pkey PRIMARY KEY (id);

ALTER TABLE countersign.change_authors ADD CONSTRAINT change_authors_repo_branch_path_content_person_how_key UNIQUE (repo, branch, path, content, person, how);

ALTER TABLE countersign.connections ADD CONSTRAINT connections_pkey PRIMARY KEY (platform, user_id, workspace, server);

ALTER TABLE countersign.conversation_summaries ADD CONSTRAINT conversation_summaries_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES countersign.conversations(id) ON DELETE CASCADE;

ALTER TABLE countersign.conversation_summaries ADD CONSTRAINT conversation_summaries_pkey PRIMARY KEY (conversation_id);

ALTER TABLE countersign.conversations ADD CONSTRAINT conversations_pkey PRIMARY KEY (id);

ALTER TABLE countersign.grants ADD CONSTRAINT grants_pkey PRIMARY KEY (id);

ALTER TABLE countersign.inbound_events ADD CONSTRAINT inbound_events_pkey PRIMARY KEY (event_id);

ALTER TABLE countersign.messages ADD CONSTRAINT messages_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES countersign.conversations(id) ON DELETE CASCADE;

ALTER TABLE countersign.messages ADD CONSTRAINT messages_pkey PRIMARY KEY (id);

ALTER TABLE countersign.model_rounds ADD CONSTRAINT model_rounds_pkey PRIMARY KEY (work_item_id, round);

ALTER TABLE countersign.oauth_clients ADD CONSTRAINT oauth_clients_pkey PRIMARY KEY (server);

ALTER TABLE countersign.oauth_states ADD CONSTRAINT oauth_states_pkey PRIMARY KEY (state_hash);

ALTER TABLE countersign.rate_buckets ADD CONSTRAINT rate_buckets_pkey PRIMARY KEY (key);

ALTER TABLE countersign.reply_outbox ADD CONSTRAINT reply_outbox_pkey PRIMARY KEY (seq);

ALTER TABLE countersign.reply_outbox ADD CONSTRAINT reply_outbox_work_item_id_key UNIQUE (work_item_id);

ALTER TABLE countersign.schedule_runs ADD CONSTRAINT schedule_runs_outcome_check CHECK ((outcome = ANY (ARRAY['running'::text, 'done'::text, 'failed'::text, 'expired'::text, 'cancelled'::text, 'refused'::text])));

ALTER TABLE countersign.schedule_runs ADD CONSTRAINT schedule_runs_pkey PRIMARY KEY (schedule_id, slot);

ALTER TABLE countersign.schedule_runs ADD CONSTRAINT schedule_runs_schedule_id_fkey FOREIGN KEY (schedule_id) REFERENCES countersign.schedules(id) ON DELETE CASCADE;

ALTER TABLE countersign.schedules ADD CONSTRAINT schedules_catch_up_check CHECK ((catch_up = ANY (ARRAY['latest'::text, 'none'::text])));

ALTER TABLE countersign.schedules ADD CONSTRAINT schedules_every_seconds_check CHECK ((every_seconds > 0));

ALTER TABLE countersign.schedules ADD CONSTRAINT schedules_kind_check CHECK ((kind = ANY (ARRAY['cron'::text, 'every'::text, 'once'::text])));

ALTER TABLE countersign.schedules ADD CONSTRAINT schedules_pkey PRIMARY KEY (id);

ALTER TABLE countersign.schedules ADD CONSTRAINT schedules_status_check CHECK ((status = ANY (ARRAY['active'::text, 'paused'::text, 'finished'::text])));

ALTER TABLE countersign.schema_migrations ADD CONSTRAINT schema_migrations_id_key UNIQUE (id);

ALTER TABLE countersign.schema_migrations ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (name);

ALTER TABLE countersign.tool_executions ADD CONSTRAINT tool_executions_pkey PRIMARY KEY (work_item_id, tool_call_id);

ALTER TABLE countersign.tool_executions ADD CONSTRAINT tool_executions_status_check CHECK ((status = ANY (ARRAY['started'::text, 'finished'::text])));

ALTER TABLE countersign.turn_checkpoints ADD CONSTRAINT turn_checkpoints_pkey PRIMARY KEY (work_item_id);

ALTER TABLE countersign.turn_feedback ADD CONSTRAINT turn_feedback_pkey PRIMARY KEY (work_item_id, platform, workspace, user_id);

ALTER TABLE countersign.turn_feedback ADD CONSTRAINT turn_feedback_vote_check CHECK ((vote = ANY (ARRAY['up'::text, 'down'::text])));

ALTER TABLE countersign.work_items ADD CONSTRAINT work_items_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES countersign.conversations(id) ON DELETE CASCADE;

ALTER TABLE countersign.work_items ADD CONSTRAINT work_items_pkey PRIMARY KEY (id);

ALTER TABLE countersign.work_items ADD CONSTRAINT work_items_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'awaiting_approval'::text, 'done'::text, 'failed'::text, 'cancelled'::text])));

ALTER TABLE countersign.worker_processes ADD CONSTRAINT worker_processes_pkey PRIMARY KEY (id);

ALTER TABLE countersign.worker_slots ADD CONSTRAINT worker_slots_pkey PRIMARY KEY (worker_id);

ALTER TABLE countersign.worker_slots ADD CONSTRAINT worker_slots_process_id_fkey FOREIGN KEY (process_id) REFERENCES countersign.worker_processes(id) ON DELETE CASCADE;

ALTER TABLE countersign.workspace_baselines ADD CONSTRAINT workspace_baselines_pkey PRIMARY KEY (workspace);

ALTER TABLE countersign.workspace_changes ADD CONSTRAINT workspace_changes_pkey PRIMARY KEY (id);

-- Indexes (other than those of constraints)

CREATE INDEX approval_audit_at ON countersign.approval_audit USING btree (at);

CREATE INDEX approval_audit_envelope ON countersign.approval_audit USING btree (envelope_id, id);

CREATE INDEX approval_audit_budget_window ON countersign.approval_audit_budget USING btree (window_start);

CREATE INDEX approval_envelopes_context ON countersign.approval_envelopes USING btree (context_id);

CREATE INDEX approval_envelopes_pending_expiry ON countersign.approval_envelopes USING btree (expires_at) WHERE (status = 'pending'::text);

CREATE INDEX budget_reservations_work_item ON countersign.budget_reservations USING btree (work_item_id);

CREATE INDEX connections_by_server ON countersign.connections USING btree (server);

CREATE INDEX grants_live ON countersign.grants USING btree (platform, workspace, channel, tool) WHERE (revoked_at IS NULL);

CREATE INDEX inbound_events_received ON countersign.inbound_events USING btree (received_at);

CREATE INDEX messages_conversation ON countersign.messages USING btree (conversation_id, id);

CREATE INDEX oauth_states_expiry ON countersign.oauth_states USING btree (expires_at);

CREATE INDEX reply_outbox_available ON countersign.reply_outbox USING btree (available_at, seq);

CREATE INDEX schedule_runs_running ON countersign.schedule_runs USING btree (enqueued_at) WHERE (outcome = 'running'::text);

CREATE INDEX schedules_due ON countersign.schedules USING btree (next_run_at) WHERE (status = 'active'::text);

CREATE INDEX schedules_owner ON countersign.schedules USING btree (owner_key);

CREATE INDEX work_items_approval_context ON countersign.work_items USING btree ((((item -> 'input'::text) ->> 'approvalContextId'::text)));

CREATE INDEX work_items_conversation_queue ON countersign.work_items USING btree (conversation_id, seq) WHERE (status = 'queued'::text);

CREATE INDEX work_items_status ON countersign.work_items USING btree (status, finished_at);

CREATE INDEX work_items_unsettled_by_place ON countersign.work_items USING btree ((((item -> 'reply'::text) ->> 'platform'::text)), COALESCE(((item -> 'reply'::text) ->> 'workspace'::text), ''::text), priority) WHERE (status = ANY (ARRAY['queued'::text, 'running'::text]));

CREATE INDEX workspace_changes_by_workspace ON countersign.workspace_changes USING btree (workspace, changed_at);

-- Views

-- (none)

-- Functions

CREATE OR REPLACE FUNCTION countersign.advance_conversation(p_conversation_id text, p_work_item_id uuid, p_interactive_task text, p_background_task text, p_interactive_max_priority integer)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_head uuid;
  v_next uuid;
  v_next_priority integer;
  v_rank integer;
BEGIN
  SELECT active_work_item INTO v_head FROM countersign.conversations WHERE id = p_conversation_id FOR UPDATE;
  IF v_head IS DISTINCT FROM p_work_item_id THEN
    RETURN;
  END IF;
  SELECT id, priority INTO v_next, v_next_priority FROM countersign.work_items
    WHERE conversation_id = p_conversation_id AND status = 'queued' ORDER BY seq LIMIT 1;
  UPDATE countersign.conversations SET active_work_item = v_next WHERE id = p_conversation_id;
  IF v_next IS NOT NULL THEN
    v_rank := countersign.turn_job_priority(v_next);
    PERFORM graphile_worker.add_job(
      CASE WHEN v_next_priority <= p_interactive_max_priority THEN p_interactive_task ELSE p_background_task END,
      json_build_object('workItemId', v_next::text),
      priority => v_rank::smallint,
      flags => countersign.turn_job_flags(v_rank, v_next_priority),
      max_attempts => 25);
  END IF;
END
$function$;

CREATE OR REPLACE FUNCTION countersign.enqueue_inbound_work_item(p_event_id text, p_id uuid, p_conversation_id text, p_platform text, p_type text, p_priority integer, p_item jsonb, p_created_at timestamp with time zone, p_task text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
BEGIN
  INSERT INTO countersign.inbound_events (event_id) VALUES (p_event_id) ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  RETURN countersign.enqueue_work_item(
    p_id, p_conversation_id, p_platform, p_type, p_priority, p_item, p_created_at, p_task);
END
$function$;

CREATE OR REPLACE FUNCTION countersign.enqueue_work_item(p_id uuid, p_conversation_id text, p_platform text, p_type text, p_priority integer, p_item jsonb, p_created_at timestamp with time zone, p_task text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_head uuid;
  v_rank integer;
BEGIN
  INSERT INTO countersign.conversations AS c (id, platform, active_work_item)
    VALUES (p_conversation_id, p_platform, p_id)
    ON CONFLICT (id) DO UPDATE
      SET last_activity_at = now(), active_work_item = coalesce(c.active_work_item, EXCLUDED.active_work_item)
    RETURNING c.active_work_item INTO v_head;
  INSERT INTO countersign.work_items (id, conversation_id, type, priority, item, created_at)
    VALUES (p_id, p_conversation_id, p_type, p_priority, p_item, p_created_at);
  IF v_head IS DISTINCT FROM p_id THEN
    RETURN false;
  END IF;
  v_rank := countersign.turn_job_priority(p_id);
  PERFORM graphile_worker.add_job(p_task, json_build_object('workItemId', p_id::text),
    priority => v_rank::smallint, flags => countersign.turn_job_flags(v_rank, p_priority), max_attempts => 25);
  RETURN true;
END
$function$;

CREATE OR REPLACE FUNCTION countersign.settle_work_item(p_id uuid, p_conversation_id text, p_status text, p_result jsonb, p_error text, p_messages jsonb, p_delete_checkpoint boolean, p_interactive_task text, p_background_task text, p_interactive_max_priority integer)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF p_messages IS NOT NULL AND jsonb_array_length(p_messages) > 0 THEN
    INSERT INTO countersign.messages (conversation_id, work_item_id, message)
      SELECT p_conversation_id, p_id, m FROM jsonb_array_elements(p_messages) WITH ORDINALITY AS t(m, n) ORDER BY n;
  END IF;
  UPDATE countersign.work_items SET status = p_status, result = p_result, error = p_error, finished_at = now()
    WHERE id = p_id;
  PERFORM countersign.advance_conversation(
    p_conversation_id, p_id, p_interactive_task, p_background_task, p_interactive_max_priority);
  IF p_delete_checkpoint THEN
    DELETE FROM countersign.turn_checkpoints WHERE work_item_id = p_id;
  END IF;
END
$function$;

CREATE OR REPLACE FUNCTION countersign.supersede_if_followed_up(p_conversation_id text, p_work_item_id uuid)
 RETURNS uuid
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_requester jsonb;
  v_by uuid;
BEGIN
  SELECT item->'requester' INTO v_requester FROM countersign.work_items WHERE id = p_work_item_id;
  SELECT id INTO v_by FROM countersign.work_items
   WHERE conversation_id = p_conversation_id AND status = 'queued' AND id <> p_work_item_id
     AND item->>'mode' IN ('steer', 'interrupt')
     AND item->'input'->>'prompt' IS NOT NULL
     AND item->'input'->'approval' IS NULL
     AND item->'requester'->>'platform' = v_requester->>'platform'
     AND item->'requester'->>'userId' = v_requester->>'userId'
     AND coalesce(item->'requester'->>'workspace', '') = coalesce(v_requester->>'workspace', '')
   ORDER BY seq
   LIMIT 1;
  IF v_by IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM countersign.supersede_pending_cards(p_conversation_id, v_requester, v_by);
  RETURN v_by;
END
$function$;

CREATE OR REPLACE FUNCTION countersign.supersede_parked_turns()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM countersign.supersede_pending_cards(NEW.conversation_id, NEW.item->'requester', NEW.id);
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION countersign.supersede_pending_cards(p_conversation_id text, p_requester jsonb, p_by uuid)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
  e record;
  v_count integer := 0;
BEGIN
  FOR e IN
    SELECT id, work_item_id, turn_state, withdrawn_messages FROM countersign.approval_envelopes
     WHERE conversation_id = p_conversation_id AND status = 'pending'
       AND requester->>'platform' = p_requester->>'platform'
       AND requester->>'userId' = p_requester->>'userId'
       AND coalesce(requester->>'workspace', '') = coalesce(p_requester->>'workspace', '')
     ORDER BY created_at
     FOR UPDATE
  LOOP
    v_count := v_count + 1;
    UPDATE countersign.approval_envelopes SET status = 'superseded', decided_at = now() WHERE id = e.id;
    UPDATE countersign.work_items
       SET status = 'cancelled', error = 'superseded by a newer message', finished_at = now()
     WHERE id = e.work_item_id AND status = 'awaiting_approval';
    IF e.withdrawn_messages IS NOT NULL THEN
      INSERT INTO countersign.messages (conversation_id, work_item_id, message)
        SELECT p_conversation_id, e.work_item_id, m
          FROM jsonb_array_elements(e.withdrawn_messages) WITH ORDINALITY AS t(m, n)
         ORDER BY n;
    ELSE
      INSERT INTO countersign.messages (conversation_id, work_item_id, message)
        SELECT p_conversation_id, e.work_item_id,
               CASE WHEN m->>'role' = 'assistant' THEN jsonb_build_object(
                 'role', 'assistant',
                 'text', trim(coalesce(m->>'text', '') || CASE WHEN jsonb_array_length(coalesce(m->'toolCalls', '[]'::jsonb)) > 0
                   THEN ' (I asked to run ' || (SELECT string_agg(c->>'name', ', ') FROM jsonb_array_elements(m->'toolCalls') c)
                        || '; that request was withdrawn, unanswered, when a newer message came.)'
                   ELSE '' END),
                 'toolCalls', '[]'::jsonb)
               ELSE m END
          FROM jsonb_array_elements(e.turn_state->'messages') WITH ORDINALITY AS t(m, n)
         WHERE m->>'role' IN ('user', 'assistant')
         ORDER BY n;
    END IF;
    INSERT INTO countersign.approval_audit (envelope_id, event, actor, reason, detail)
      VALUES (e.id, 'superseded', p_requester, 'superseded by a newer message', jsonb_build_object('by', p_by));
  END LOOP;
  RETURN v_count;
END
$function$;

CREATE OR REPLACE FUNCTION countersign.turn_job_flags(p_rank integer, p_priority integer)
 RETURNS text[]
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT CASE WHEN p_rank > p_priority THEN ARRAY['backlog'] END
$function$;

CREATE OR REPLACE FUNCTION countersign.turn_job_priority(p_work_item_id uuid)
 RETURNS integer
 LANGUAGE sql
 STABLE
AS $function$
  SELECT w.priority + least(
    (SELECT count(*) FROM (SELECT 1 FROM countersign.work_items o
      WHERE o.status IN ('queued', 'running')
        AND o.item->'reply'->>'platform' = w.item->'reply'->>'platform'
        AND coalesce(o.item->'reply'->>'workspace', '') = coalesce(w.item->'reply'->>'workspace', '')
        AND o.priority = w.priority
        AND o.id <> w.id
      LIMIT 100) outstanding),
    9 * w.priority - 1,
    32767 - w.priority)::integer
  FROM countersign.work_items w WHERE w.id = p_work_item_id
$function$;

-- Triggers

CREATE TRIGGER supersede_parked_turns AFTER INSERT ON countersign.work_items FOR EACH ROW WHEN ((((new.item ->> 'mode'::text) = ANY (ARRAY['steer'::text, 'interrupt'::text])) AND (((new.item -> 'input'::text) ->> 'prompt'::text) IS NOT NULL) AND (((new.item -> 'input'::text) -> 'approval'::text) IS NULL))) EXECUTE FUNCTION countersign.supersede_parked_turns();

-- Other objects (named only)

-- (none)
