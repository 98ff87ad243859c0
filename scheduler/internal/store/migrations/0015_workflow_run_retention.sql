-- jetjob schema, version 15: retention of workflow runs (issue #29).
--
-- Maintenance deletes ended workflow runs older than the run retention
-- (package retention, wfengine.ForgetEnded), a batch at a time, each
-- batch read off this index: the runs to delete, oldest first, without
-- reading the active ones or the table.
CREATE INDEX workflow_runs_ended ON workflow_runs (scheduled_at) WHERE status NOT IN ('QUEUED', 'RUNNING');
