-- jetjob schema, version 12: a cap on the runs one fire may cause through
-- child jobs (issue #26). Links are checked against the cap when they are
-- made (package refs); these let the results applier enforce it at run
-- time too, whatever links exist (made before the cap, or under a higher
-- one, or multiplied by a broadcast's parts).
--
-- chain_root is the run whose fire a run's chain started from: set on
-- child runs (their parent's root), and on the retries and broadcast parts
-- of a run that belongs to a chain or starts one. NULL: the run is its own
-- root (a scheduled, manual or backfill fire).
ALTER TABLE job_runs ADD COLUMN chain_root bigint;

-- run_chains counts the runs each root fire has caused through child jobs
-- so far. The applier locks a chain (advisory lock on its root) before it
-- reads and adds to its count, so two batches ending runs of one chain
-- cannot both pass the cap. A chain gets a row only once it goes deeper
-- than its first children (one of them has children of its own): a parent
-- whose children are leaves, the common case, writes nothing here.
-- Retention deletes the rows of chains idle for longer than the run
-- retention: their runs are gone by then.
CREATE TABLE run_chains (
    root_run   bigint PRIMARY KEY,
    runs       integer NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX run_chains_idle ON run_chains (updated_at);
