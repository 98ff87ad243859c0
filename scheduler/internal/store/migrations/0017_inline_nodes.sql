-- jetjob schema, version 17: inline job specs as workflow nodes (issue #29,
-- docs/workflows.md "Inline jobs").
--
-- A node may carry its own job spec instead of naming a job. Such a node's
-- job is a row of jobs of kind 'node', owned by its workflow: written,
-- re-written and deleted with the workflow's definition, never planned
-- (schedule none), and refused by the job endpoints' writes and triggers.
-- Its runs are ordinary node runs of an ordinary job row, so logs, kill,
-- retries, alarms, block strategies and the exactly-once keys hold as
-- for a referenced job. Deleting the workflow deletes its node jobs.
ALTER TABLE jobs DROP CONSTRAINT jobs_kind_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_kind_check CHECK (kind IN ('job', 'workflow', 'node'));
ALTER TABLE jobs ADD COLUMN owner_workflow bigint REFERENCES jobs (id) ON DELETE CASCADE,
    ADD COLUMN owner_node text,
    ADD CONSTRAINT jobs_owner CHECK ((kind = 'node') = (owner_workflow IS NOT NULL AND owner_node IS NOT NULL));
CREATE INDEX jobs_owner_workflow ON jobs (owner_workflow, owner_node) WHERE owner_workflow IS NOT NULL;
