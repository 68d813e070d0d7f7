-- Fewer round trips per turn. Every statement of a turn costs a round trip to Postgres, and on a
-- busy worker the client-side cost of a round trip (a socket write, a wake-up, parsing the reply)
-- outweighs the statement itself. These functions do in one call what took several.

-- Hands a conversation to its next queued item after `p_work_item_id` reached a resting status, and
-- adds that item's graphile-worker job (the task is chosen from its priority by the caller's rule:
-- interactive up to `p_interactive_max_priority`). Nothing happens if `p_work_item_id` is no longer
-- the head (a replayed job finishing twice). The row lock serialises this with enqueue_work_item.
CREATE FUNCTION countersign.advance_conversation(
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
BEGIN
  SELECT active_work_item INTO v_head FROM countersign.conversations WHERE id = p_conversation_id FOR UPDATE;
  IF v_head IS DISTINCT FROM p_work_item_id THEN
    RETURN;
  END IF;
  SELECT id, priority INTO v_next, v_next_priority FROM countersign.work_items
    WHERE conversation_id = p_conversation_id AND status = 'queued' ORDER BY seq LIMIT 1;
  UPDATE countersign.conversations SET active_work_item = v_next WHERE id = p_conversation_id;
  IF v_next IS NOT NULL THEN
    PERFORM graphile_worker.add_job(
      CASE WHEN v_next_priority <= p_interactive_max_priority THEN p_interactive_task ELSE p_background_task END,
      json_build_object('workItemId', v_next::text),
      priority => v_next_priority,
      max_attempts => 25);
  END IF;
END
$$;

-- Puts a work item into a resting status in one call: appends the turn's messages to the history
-- (when given), records the status, hands the conversation over, and drops the checkpoint (when
-- asked). One statement, so all of it commits or none of it does.
CREATE FUNCTION countersign.settle_work_item(
  p_id uuid,
  p_conversation_id text,
  p_status text,
  p_result jsonb,
  p_error text,
  p_messages jsonb,
  p_delete_checkpoint boolean,
  p_interactive_task text,
  p_background_task text,
  p_interactive_max_priority integer
) RETURNS void
LANGUAGE plpgsql AS $$
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
$$;

-- Enqueueing with one statement fewer: the conversation upsert makes the item the head when the
-- conversation is idle (`active_work_item` has no foreign key, so it may name the item before the
-- item's row is inserted, in the same transaction).
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
  PERFORM graphile_worker.add_job(p_task, json_build_object('workItemId', p_id::text), priority => p_priority, max_attempts => 25);
  RETURN true;
END
$$;
