-- Enqueueing a work item in one round trip: append it to its conversation's chain and, when the
-- conversation is idle, make it the head and add its graphile-worker job. The upsert of the
-- conversation row takes the row lock that serialises this with hand-overs (advanceConversation).
CREATE FUNCTION countersign.enqueue_work_item(
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
  INSERT INTO countersign.conversations AS c (id, platform) VALUES (p_conversation_id, p_platform)
    ON CONFLICT (id) DO UPDATE SET last_activity_at = now()
    RETURNING c.active_work_item INTO v_head;
  INSERT INTO countersign.work_items (id, conversation_id, type, priority, item, created_at)
    VALUES (p_id, p_conversation_id, p_type, p_priority, p_item, p_created_at);
  IF v_head IS NOT NULL THEN
    RETURN false;
  END IF;
  UPDATE countersign.conversations SET active_work_item = p_id WHERE id = p_conversation_id;
  PERFORM graphile_worker.add_job(p_task, json_build_object('workItemId', p_id::text), priority => p_priority, max_attempts => 25);
  RETURN true;
END
$$;
