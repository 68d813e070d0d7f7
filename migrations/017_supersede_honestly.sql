-- Superseding a card is honest, and covers the planning round (#30). Migration 012's trigger wrote
-- every tool call of the superseded turn into the history as "withdrawn, unanswered", including
-- calls that had already run, so the model could repeat their side effects. Now the turn's history
-- as it should read once withdrawn is made by the code that parks the turn (src/approval/request.ts,
-- `withdrawnHistory`) and stored with the envelope: calls that ran keep their results, only the
-- waiting ones are named as withdrawn. Envelopes parked before this keep the old rewrite.
--
-- One function does the superseding, for the trigger (a message that arrives after the card) and for
-- the park (a message that arrived while the model was still planning, before the card existed:
-- countersign.supersede_if_followed_up, called in the transaction that parks the turn).
ALTER TABLE countersign.approval_envelopes ADD COLUMN withdrawn_messages jsonb;

CREATE FUNCTION countersign.supersede_pending_cards(p_conversation_id text, p_requester jsonb, p_by uuid)
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
       -- Slack ids are unique only within the workspace that issued them (src/core/person.ts).
       AND (requester->>'platform' <> 'slack'
            OR coalesce(requester->>'workspace', '') = coalesce(p_requester->>'workspace', ''))
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

CREATE OR REPLACE FUNCTION countersign.supersede_parked_turns() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM countersign.supersede_pending_cards(NEW.conversation_id, NEW.item->'requester', NEW.id);
  RETURN NULL;
END
$$;

-- The oldest message still queued behind a turn that just parked, from its requester, that would
-- have superseded the card had the card existed when it came (the trigger's own condition): it came
-- while the model was planning. Returns that message's id when it superseded the card, else null.
CREATE FUNCTION countersign.supersede_if_followed_up(p_conversation_id text, p_work_item_id uuid)
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
     AND (v_requester->>'platform' <> 'slack'
          OR coalesce(item->'requester'->>'workspace', '') = coalesce(v_requester->>'workspace', ''))
   ORDER BY seq
   LIMIT 1;
  IF v_by IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM countersign.supersede_pending_cards(p_conversation_id, v_requester, v_by);
  RETURN v_by;
END
$$;
