-- The durable turn pipeline: conversations, their ordered work items, history, checkpoints,
-- tool executions and worker liveness. graphile-worker keeps its own schema (graphile_worker).

CREATE SCHEMA IF NOT EXISTS countersign;

-- One row per conversation (platform + channel + thread, or a DM). `active_work_item` is the head of
-- the conversation's chain: the only item of this conversation that has a graphile-worker job.
CREATE TABLE countersign.conversations (
  id text PRIMARY KEY,
  platform text NOT NULL,
  active_work_item uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_activity_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE countersign.work_items (
  id uuid PRIMARY KEY,
  conversation_id text NOT NULL REFERENCES countersign.conversations (id) ON DELETE CASCADE,
  -- Global insertion order; within a conversation it is the order turns run in.
  seq bigserial NOT NULL,
  type text NOT NULL,
  priority integer NOT NULL,
  status text NOT NULL DEFAULT 'queued'
    CHECK (status IN ('queued', 'running', 'awaiting_approval', 'done', 'failed', 'cancelled')),
  item jsonb NOT NULL,
  result jsonb,
  error text,
  attempts integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz
);
CREATE INDEX work_items_conversation_queue ON countersign.work_items (conversation_id, seq) WHERE status = 'queued';
CREATE INDEX work_items_status ON countersign.work_items (status, finished_at);

-- Conversation history in provider-neutral form, appended when a turn finishes.
CREATE TABLE countersign.messages (
  id bigserial PRIMARY KEY,
  conversation_id text NOT NULL REFERENCES countersign.conversations (id) ON DELETE CASCADE,
  work_item_id uuid,
  message jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX messages_conversation ON countersign.messages (conversation_id, id);

-- State of a turn after its last completed round, so a replayed job resumes instead of repeating work.
CREATE TABLE countersign.turn_checkpoints (
  work_item_id uuid PRIMARY KEY,
  format_version integer NOT NULL,
  round integer NOT NULL,
  state jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Every tool execution, recorded by tool-call id before it runs and again with its result, so a
-- replay never runs a tool twice.
CREATE TABLE countersign.tool_executions (
  work_item_id uuid NOT NULL,
  tool_call_id text NOT NULL,
  tool text NOT NULL,
  args jsonb NOT NULL,
  status text NOT NULL CHECK (status IN ('started', 'finished')),
  result jsonb,
  started_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  PRIMARY KEY (work_item_id, tool_call_id)
);

-- Model usage per round.
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
  fallbacks jsonb NOT NULL DEFAULT '[]',
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (work_item_id, round)
);

-- Liveness of worker processes. graphile-worker alone keeps a dead worker's jobs locked for 4 hours;
-- a live process that sees a stale heartbeat releases them (force_unlock_workers).
CREATE TABLE countersign.worker_processes (
  id text PRIMARY KEY,
  hostname text NOT NULL,
  pid integer NOT NULL,
  role text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now()
);

-- graphile-worker's worker ids (one per concurrency slot) belong to a process.
CREATE TABLE countersign.worker_slots (
  worker_id text PRIMARY KEY,
  process_id text NOT NULL REFERENCES countersign.worker_processes (id) ON DELETE CASCADE
);

-- Shared token buckets for platform rate limits (every worker process draws from the same bucket).
CREATE TABLE countersign.rate_buckets (
  key text PRIMARY KEY,
  tokens double precision NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
