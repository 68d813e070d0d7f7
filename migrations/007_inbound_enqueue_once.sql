-- Taking in a platform event exactly once: the event's dedupe mark and its work item commit together.
-- Before this, the mark was committed on its own before the enqueue, so an enqueue that failed (the
-- database went away between the two) left a mark behind and the platform's retry was dropped as a
-- duplicate: the message was lost. Now a failed enqueue leaves nothing, and a retry is taken.
--
-- Two ingress replicas receiving the same event (two Discord gateway sessions, a Slack retry landing
-- on another replica while the first delivery is still being processed) race on the primary key: the
-- second insert waits for the first transaction and then finds the mark, or takes the event if the
-- first rolled back.
--
-- Returns NULL when the event was already taken (nothing is enqueued), otherwise what
-- countersign.enqueue_work_item returns (whether the item became its conversation's head at once).
CREATE FUNCTION countersign.enqueue_inbound_work_item(
  p_event_id text,
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
BEGIN
  INSERT INTO countersign.inbound_events (event_id) VALUES (p_event_id) ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  RETURN countersign.enqueue_work_item(
    p_id, p_conversation_id, p_platform, p_type, p_priority, p_item, p_created_at, p_task);
END
$$;
