-- The reply outbox (#35): a parked turn's text is delivered from the outbox too, apart from the slot
-- that computed it. Its continuation (a new work item, replying below the card) must show nothing
-- before that text is visible, or the park text would land late, after the continuation's reply.
-- `after_work_item` names the work item whose outbox row must be gone before this row is delivered
-- (the parked turn a continuation carries on); its delivery takes that row over when nobody
-- delivers it (a killed process's), so a crash never leaves the continuation waiting.
ALTER TABLE countersign.reply_outbox ADD COLUMN after_work_item uuid;
