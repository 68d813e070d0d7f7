-- A scheduled run's link to where it answered (the platform's permalink of its reply), recorded when
-- the run comes to rest by a process that can reach the platform, so the history in chat and in
-- `countersign schedules history` shows it without asking the platform again (docs/schedules.md).
ALTER TABLE countersign.schedule_runs ADD COLUMN link text;
