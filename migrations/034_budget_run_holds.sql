-- Spend limits (#38): an external coding CLI's run holds its worst case before it starts. The CLI runs
-- in a process group of its own, so a worker killed mid-run can leave it running and spending. Such
-- a hold, when it is found lost (the work item's replay, or housekeeping once it expired), is counted
-- as spent rather than given back: what the run spent is unknown, and at most the hold when the CLI
-- is capped by it. A model call's reservation is still given back: its call ends with its worker.
ALTER TABLE countersign.budget_reservations ADD COLUMN spent_if_lost boolean NOT NULL DEFAULT false;
