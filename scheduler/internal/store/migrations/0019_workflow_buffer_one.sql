-- jetjob schema, version 19: a workflow's overlap policy buffer_one (issue
-- #34): while a run is active, one more fire waits (QUEUED) behind it and
-- any further fire is DISCARDED, as a job's block strategy buffer_one.
ALTER TABLE workflows DROP CONSTRAINT workflows_overlap_check;
ALTER TABLE workflows ADD CONSTRAINT workflows_overlap_check
    CHECK (overlap IN ('serial', 'discard_later', 'cover_early', 'buffer_one', 'concurrent'));
