-- Spend limits (#38): a worker process may hold a lease on a budget with plenty of room — one
-- reservation covering many calls, which it hands out in memory — so a model call no longer costs two
-- statements on the shared period row. A lease belongs to its process, not to a work item, and its
-- end is the process's: while the process lives (countersign.worker_processes) the lease holds,
-- whatever its age; once the process is gone, what the lease still holds is counted as spent, since
-- calls it covered may have settled in the process's memory without being written yet.
ALTER TABLE countersign.budget_reservations ADD COLUMN process_id text;
