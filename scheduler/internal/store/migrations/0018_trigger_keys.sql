-- jetjob schema, version 18: idempotency keys of triggers (issue #34).
--
-- POST /jobs/{id}/trigger (and a workflow's) with an idempotency key
-- claims (job, key) here in the transaction that writes the run: a second
-- trigger with the key within KeyWindow (24 h) answers the first one's run
-- instead of writing another, and one with the key but another request is
-- refused. Not a column of job_runs: a unique index of a partitioned table
-- must hold its partition key (scheduled_at), and a key is one per job
-- whatever its run's time. The primary key is also what serialises racing
-- triggers: the second waits on the first's uncommitted row, then sees it.
-- The maintenance loop deletes keys older than the window.
CREATE TABLE trigger_keys (
    job_id     bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    key        text NOT NULL,
    request    bytea NOT NULL,
    run_id     bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (job_id, key)
);
CREATE INDEX trigger_keys_created ON trigger_keys (created_at);
