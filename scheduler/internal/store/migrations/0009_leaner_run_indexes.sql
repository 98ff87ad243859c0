-- jetjob schema, version 9: fewer index entries written per run (issue #16).
--
-- A run is one INSERT (SCHEDULED) and one or two UPDATEs (RUNNING, then its
-- end). No update is HOT (status is in job_runs_planned's predicate), so
-- every index whose predicate the row version matches gets a new entry on
-- each write: with 0004's indexes 13.8 entries per run. This migration
-- leaves about 9.7 (the primary key, the fire key, group, time, and the
-- planned index's one entry; the status index only for the rare runs it
-- keeps), with every run search still read off an index in its keyset
-- order (store.searchSQL; checked by TestSearchMillionRuns).
--
-- The statements run in the migration's transaction: CREATE INDEX on the
-- partitioned table builds the index of every partition (new partitions,
-- attached by jetjob_create_run_partition, get it built on attach), holding
-- a SHARE lock on job_runs meanwhile, so run writes wait for the build (one
-- scan of each partition; the index itself is small). CONCURRENTLY is not
-- possible inside a transaction nor on a partitioned table.

-- Status: only the statuses a search by status is for. SCHEDULED runs are
-- few and already in job_runs_planned (a search for them sorts them);
-- SUCCEEDED is most runs, found reading job_runs_time newest first (the
-- search states that index's predicate for it: see store.searchSQL). A
-- run's SCHEDULED insert and its SUCCEEDED update now write no entry here.
DROP INDEX job_runs_status;
CREATE INDEX job_runs_status ON job_runs (status, scheduled_at DESC, id DESC)
    WHERE status NOT IN ('SCHEDULED', 'SUCCEEDED');

-- A job's runs are read off the fire key, UNIQUE (job_id, scheduled_at,
-- shard_index, attempt): in scheduled order, with the few runs of one fire
-- (shards, attempts) put in id order by an incremental sort, so the listing
-- keeps its (scheduled_at DESC, id DESC) order and keyset paging.
DROP INDEX job_runs_job;

-- job_runs_group stays: groups are few, but a small group's runs among a
-- big group's would be found reading the time index only after scanning
-- nearly every run of the window.
