-- Fair turn jobs (#35, P10): one place's burst must not starve everyone else's first turns.
--
-- graphile-worker runs jobs by priority, then by age. All of a person's turns are CRITICAL, so when 50
-- approvals are clicked at once in one Slack workspace, their 50 continuations fill the interactive
-- slots and a mention from another workspace (or from Discord) queues behind all of them: seconds of
-- compute queueing for someone who asked nothing of that workspace.
--
-- Now a turn's job is ranked, inside its priority class, by how much work of the same class its place
-- (platform and workspace: Slack team, Discord guild) already has queued or running: the first gets
-- the class's own priority, the next one more, and so on up to just below the next class (CRITICAL 1
-- → at most 9; HIGH 10 → at most 99). A place with nothing outstanding therefore goes ahead of a
-- busy place's backlog and waits only for the next free slot; the busy place's own work keeps its
-- order and still runs as soon as nobody quieter waits. The class boundaries never move: a demoted
-- CRITICAL job still runs before any HIGH one, and the task (interactive or background) is chosen
-- from the work item's own priority, as before.
--
-- Why a rank at enqueue and not a per-place slot cap or a queue per place: graphile-worker has neither
-- per-key concurrency nor cheap high-cardinality queues (each named queue is a row job selection must
-- consider), and a cap would leave slots idle while only one place has work. The priority is fixed
-- when the job is added; a place's backlog added while it was quiet keeps its place, which is at most
-- one job per conversation (a conversation is a chain with one job at its head).

-- Only unsettled items are counted, so the index stays as small as the backlog.
CREATE INDEX work_items_unsettled_by_place ON countersign.work_items (
  (item->'reply'->>'platform'),
  (coalesce(item->'reply'->>'workspace', '')),
  priority
) WHERE status IN ('queued', 'running');

-- The graphile-worker priority of a work item's job: its priority, plus the number of other queued or
-- running items of its place and priority, capped below the next class (and within smallint). The
-- count stops at 100 rows: a background backlog of thousands would otherwise make every enqueue scan
-- all of it, and past 100 the rank tells nothing more.
CREATE FUNCTION countersign.turn_job_priority(p_work_item_id uuid) RETURNS integer
LANGUAGE sql STABLE AS $$
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
$$;

-- The job's flags: 'backlog' when its place already has work of its class queued or running. Ranks
-- alone cannot keep a slot for a quiet place: once every interactive slot runs one place's burst, a
-- quiet place's first turn still waits for one of them to end. So each worker also runs a small
-- express pool that forbids this flag (src/queue/runner.ts): it takes only turns whose place had
-- nothing outstanding, and is idle otherwise.
-- Given the job's rank (countersign.turn_job_priority) and the item's own priority, so the count
-- behind the rank runs once per enqueue.
CREATE FUNCTION countersign.turn_job_flags(p_rank integer, p_priority integer) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_rank > p_priority THEN ARRAY['backlog'] END
$$;

-- As in 006, with the job's priority from countersign.turn_job_priority.
CREATE OR REPLACE FUNCTION countersign.advance_conversation(
  p_conversation_id text,
  p_work_item_id uuid,
  p_interactive_task text,
  p_background_task text,
  p_interactive_max_priority integer
) RETURNS void
LANGUAGE plpgsql AS $$
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
$$;

-- As in 006, with the job's priority from countersign.turn_job_priority (the item is inserted first).
CREATE OR REPLACE FUNCTION countersign.enqueue_work_item(
  p_id uuid,
  p_conversation_id text,
  p_platform text,
  p_type text,
  p_priority integer,
  p_item jsonb,
  p_created_at timestamptz,
  p_task text
) RETURNS boolean
LANGUAGE plpgsql AS $$
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
$$;
