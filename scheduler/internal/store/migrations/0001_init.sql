-- jetjob schema, version 1: groups, jobs, runs.

-- One row: the cluster's fixed settings, written once by the first scheduler.
CREATE TABLE cluster (
    id          boolean PRIMARY KEY DEFAULT true CHECK (id),
    shard_count integer NOT NULL CHECK (shard_count BETWEEN 1 AND 4096),
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- A group is xxl-job's executor "appname": the workers that can run its jobs.
CREATE TABLE job_groups (
    name       text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_-]{1,64}$'),
    title      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE jobs (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    group_name     text NOT NULL REFERENCES job_groups (name),
    name           text NOT NULL,
    description    text NOT NULL DEFAULT '',
    handler        text NOT NULL,
    params         text NOT NULL DEFAULT '',
    schedule_type  text NOT NULL,
    schedule_expr  text NOT NULL DEFAULT '',
    timezone       text NOT NULL DEFAULT 'UTC',
    misfire_policy text NOT NULL,
    route_strategy text NOT NULL,
    block_strategy text NOT NULL,
    timeout_ms     bigint NOT NULL DEFAULT 0 CHECK (timeout_ms >= 0),
    max_retries    integer NOT NULL DEFAULT 0 CHECK (max_retries >= 0),
    enabled        boolean NOT NULL DEFAULT true,
    -- shard is id mod shard_count: fixed for the life of the job.
    shard          integer NOT NULL,
    -- next_fire_at is the first fire not yet planned as a run; NULL when the
    -- schedule has none (none, once already planned, fix_delay waiting for
    -- its run to end).
    next_fire_at   timestamptz,
    last_fire_at   timestamptz,
    version        bigint NOT NULL DEFAULT 1,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (group_name, name)
);

-- The pre-read: due jobs of a shard, in fire order.
CREATE INDEX jobs_due ON jobs (shard, next_fire_at) WHERE enabled AND next_fire_at IS NOT NULL;

-- One row per trigger attempt (xxl_job_log). Runs outlive their job.
CREATE TABLE job_runs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id       bigint NOT NULL,
    group_name   text NOT NULL,
    shard        integer NOT NULL,
    trigger_type text NOT NULL,
    status       text NOT NULL,
    scheduled_at timestamptz NOT NULL,
    triggered_at timestamptz,
    started_at   timestamptz,
    finished_at  timestamptz,
    attempt      integer NOT NULL DEFAULT 0,
    retry_of     bigint,
    shard_index  integer NOT NULL DEFAULT 0,
    shard_total  integer NOT NULL DEFAULT 0,
    worker_id    text NOT NULL DEFAULT '',
    -- params is NULL when the run uses its job's params.
    params       text,
    message      text NOT NULL DEFAULT '',
    stream_seq   bigint,
    -- Planning is idempotent: one run per fire.
    UNIQUE (job_id, scheduled_at, shard_index, attempt)
);

CREATE INDEX job_runs_job ON job_runs (job_id, id DESC);
-- Planned but not yet published: what a shard's owner fires and recovers.
CREATE INDEX job_runs_planned ON job_runs (shard, scheduled_at) WHERE status = 'SCHEDULED';

-- Status rank for monotonic transitions (see wire.Status.Rank).
CREATE FUNCTION jetjob_status_rank(s text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE s
        WHEN 'SCHEDULED' THEN 0
        WHEN 'TRIGGERED' THEN 1
        WHEN 'RUNNING'   THEN 2
        ELSE 3
    END
$$;
