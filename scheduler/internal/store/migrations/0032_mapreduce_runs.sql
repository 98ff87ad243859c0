-- jetjob schema, version 32: map/reduce from the worker SDK (issue #33,
-- docs/flow-control.md "Map/reduce").
--
-- A run whose handler maps (worker Job.Map) becomes the root of a fire of
-- parts: the results applier, in the transaction recording the root's
-- success, marks it with shard_fire = its own id (shard_total stays 0, so
-- it is never counted as a part) and writes one part per item (shard_fire
-- = the root, shard_index i of shard_total n), keyed like every run.
--
-- job_runs.map_item is a part's item, as JSON: carried into its trigger
-- and into its retries. NULL for every other run.
ALTER TABLE job_runs ADD COLUMN map_item text;

-- job_runs.map_reduce names the fire whose parts' outputs a reduce gets:
-- on the root of a fire that asked for a reduce (its own id), and on that
-- fire's reduce run and its retries (the root's id). NULL for every other
-- run. The part completing the set writes the reduce run once.
ALTER TABLE job_runs ADD COLUMN map_reduce bigint;
