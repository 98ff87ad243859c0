-- jetjob schema, version 2: shard leases, scheduler instances, fix_delay.

-- Live scheduler instances. Each heartbeats its row; the number of live
-- rows decides every instance's fair share of shards.
CREATE TABLE schedulers (
    id           text PRIMARY KEY,
    host         text NOT NULL DEFAULT '',
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);

-- One row per shard (rows are created with the cluster, see store.Open): who may plan and fire it, until when (database
-- clock), and the fencing epoch, incremented on every change of owner.
-- Every write a scheduler makes for a shard is conditional on owner and
-- epoch still being what it acquired.
CREATE TABLE scheduler_shards (
    shard      integer PRIMARY KEY,
    owner      text,
    epoch      bigint NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL DEFAULT '-infinity'
);

-- fix_delay: the delay after a run ends, for the results applier to plan
-- the next fire without parsing the schedule in SQL. 0 for other types.
ALTER TABLE jobs ADD COLUMN delay_ms bigint NOT NULL DEFAULT 0;

-- Runs written SCHEDULED by something other than the planner (manual
-- triggers now; retries and child jobs later): the owner's sweep finds
-- them without scanning every planned fire.
CREATE INDEX job_runs_unplanned ON job_runs (shard, scheduled_at)
    WHERE status = 'SCHEDULED' AND trigger_type NOT IN ('schedule', 'misfire');
