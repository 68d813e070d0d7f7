-- A person's request to stop a running turn (Stop button, Ctrl-C). Workers are told at once via
-- NOTIFY countersign_stop and also check the column between rounds, so a missed notification only
-- delays the stop by one round.
ALTER TABLE countersign.work_items
  ADD COLUMN stop_requested_at timestamptz,
  ADD COLUMN stopped_by jsonb;
