-- Superseding compares the whole account on every platform (#32). Migration 017 compared the
-- workspace of the person who wrote with the card's requester only on Slack, where user ids are
-- scoped to the workspace that issued them; every other platform's ids were taken as global. Which
-- platforms scope their ids is now each adapter's rule (src/adapters/<platform>/rules.ts), which SQL
-- cannot read, and within one conversation the same account always carries the same workspace (the
-- rule `sameAccountHere` in src/core/person.ts states for follow-ups and Stop). So the functions
-- compare the workspace always: the same outcome for every built-in platform, and an embedding
-- application's platform with workspace-scoped ids no longer lets a same-looking id from another
-- workspace withdraw someone else's card.
CREATE OR REPLACE FUNCTION countersign.supersede_pending_cards(p_conversation_id text, p_requester jsonb, p_by uuid)
RETURNS integer
LANGUAGE plpgsql AS $$
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
$$;

CREATE OR REPLACE FUNCTION countersign.supersede_if_followed_up(p_conversation_id text, p_work_item_id uuid)
RETURNS uuid
LANGUAGE plpgsql AS $$
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
$$;
