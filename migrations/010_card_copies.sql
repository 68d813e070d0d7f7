-- Copies of an approval card sent to the people who can decide (#18 routing): an approvals channel
-- or each approver's DM. Each is {reply, messageId, origin}; a decision updates every copy.
ALTER TABLE countersign.approval_envelopes ADD COLUMN card_copies jsonb NOT NULL DEFAULT '[]'::jsonb;
