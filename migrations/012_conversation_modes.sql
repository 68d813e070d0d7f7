-- Conversation modes (#20). In `steer` and `interrupt` a new message from the requester of a
-- pending approval card supersedes the card: nobody can approve a plan its requester has already
-- changed. The trigger does it in the transaction that enqueues the message, whichever ingress took
-- it, so the card's nonce can no longer be consumed once the message is acknowledged.
ALTER TABLE countersign.approval_envelopes DROP CONSTRAINT approval_envelopes_status_check;
ALTER TABLE countersign.approval_envelopes ADD CONSTRAINT approval_envelopes_status_check
  CHECK (status IN ('pending', 'consumed', 'expired', 'superseded'));

ALTER TABLE countersign.approval_audit DROP CONSTRAINT approval_audit_event_check;
ALTER TABLE countersign.approval_audit ADD CONSTRAINT approval_audit_event_check CHECK (event IN (
  'requested', 'click', 'rejected', 'partial', 'consumed', 'executed', 'denied', 'answered', 'refused', 'expired',
  'allowed', 'policy_denied', 'granted', 'grant_used', 'grant_revoked', 'superseded'));

-- The superseded turn is cancelled and what it had said joins the history, so the new message's turn
-- re-plans knowing it: the person's words and the assistant's text, with the withdrawn calls named
-- in words (a tool call without its result would be refused by the model APIs).
CREATE FUNCTION countersign.supersede_parked_turns() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  e record;
BEGIN
  FOR e IN
    SELECT id, work_item_id, turn_state FROM countersign.approval_envelopes
     WHERE conversation_id = NEW.conversation_id AND status = 'pending'
       AND requester->>'platform' = NEW.item->'requester'->>'platform'
       AND requester->>'userId' = NEW.item->'requester'->>'userId'
     ORDER BY created_at
     FOR UPDATE
  LOOP
    UPDATE countersign.approval_envelopes SET status = 'superseded', decided_at = now() WHERE id = e.id;
    UPDATE countersign.work_items
       SET status = 'cancelled', error = 'superseded by a newer message', finished_at = now()
     WHERE id = e.work_item_id AND status = 'awaiting_approval';
    INSERT INTO countersign.messages (conversation_id, work_item_id, message)
      SELECT NEW.conversation_id, e.work_item_id,
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
    INSERT INTO countersign.approval_audit (envelope_id, event, actor, reason, detail)
      VALUES (e.id, 'superseded', NEW.item->'requester', 'superseded by a newer message',
              jsonb_build_object('by', NEW.id));
  END LOOP;
  RETURN NULL;
END
$$;

CREATE TRIGGER supersede_parked_turns AFTER INSERT ON countersign.work_items
  FOR EACH ROW
  WHEN (NEW.item->>'mode' IN ('steer', 'interrupt')
        AND NEW.item->'input'->>'prompt' IS NOT NULL
        AND NEW.item->'input'->'approval' IS NULL)
  EXECUTE FUNCTION countersign.supersede_parked_turns();
