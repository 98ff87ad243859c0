-- jetjob schema, version 31: a fixed shard count (issue #33,
-- docs/jobs.md "Fixed shard count").
--
-- jobs.fixed_shards > 0 runs every fire of the job as that many parts
-- (index 0..fixed_shards-1), spread over the group's shared queue; 0 (every
-- existing job) runs a fire as one run. It is refused with route
-- sharding_broadcast, whose part count is the live workers'.
ALTER TABLE jobs
    ADD COLUMN fixed_shards integer NOT NULL DEFAULT 0
        CHECK (fixed_shards = 0 OR fixed_shards BETWEEN 2 AND 1000);

-- job_runs.shard_fire names the fire a part of a fixed shard count belongs
-- to: the id of its part 0, carried into every part and every retry of a
-- part. The results path reads a fire's parts by it to trigger the
-- children once, after the last part succeeded. NULL for every other run
-- (broadcast parts included: each of those triggers the children).
ALTER TABLE job_runs ADD COLUMN shard_fire bigint;

-- The parts of a fire, found by the fire when one of them succeeds.
CREATE INDEX job_runs_shard_fire ON job_runs (shard_fire, shard_index) WHERE shard_fire IS NOT NULL;
