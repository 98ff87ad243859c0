-- jetjob schema, version 4: job_runs partitioned by day, the daily rollup,
-- and the indexes of run search.
--
-- Why partitions: retention then drops a whole day with one DROP TABLE
-- instead of deleting millions of rows (no bloat, no vacuum debt, no long
-- transaction on the hot table). Each UTC day of scheduled_at is one
-- partition (job_runs_pYYYYMMDD); job_runs_default catches anything outside
-- the created days, and the maintenance loop (scheduler/retention) moves
-- such rows into their day's partition when it creates it.
--
-- The hot path keeps partition pruning: every by-id UPDATE also matches
-- scheduled_at, so a row touches one partition.

-- The old table, its sequence and constraint/index names step aside so
-- that the new ones keep the names the code and operators know.
ALTER TABLE job_runs RENAME TO job_runs_unpartitioned;
ALTER SEQUENCE job_runs_id_seq RENAME TO job_runs_unpartitioned_id_seq;
ALTER TABLE job_runs_unpartitioned RENAME CONSTRAINT job_runs_pkey TO job_runs_unpartitioned_pkey;
ALTER TABLE job_runs_unpartitioned RENAME CONSTRAINT job_runs_job_id_scheduled_at_shard_index_attempt_key
    TO job_runs_unpartitioned_key;
ALTER INDEX job_runs_job RENAME TO job_runs_unpartitioned_job;
ALTER INDEX job_runs_planned RENAME TO job_runs_unpartitioned_planned;
ALTER INDEX job_runs_unplanned RENAME TO job_runs_unpartitioned_unplanned;
ALTER INDEX job_runs_alarm_pending RENAME TO job_runs_unpartitioned_alarm_pending;

-- One row per trigger attempt (xxl_job_log). Runs outlive their job.
CREATE TABLE job_runs (
    -- Plain increasing ids, continued from the old table's sequence: API
    -- clients keep using them. Unique in practice (one sequence), but the
    -- primary key must contain the partition key.
    id             bigint GENERATED ALWAYS AS IDENTITY,
    job_id         bigint NOT NULL,
    group_name     text NOT NULL,
    shard          integer NOT NULL,
    trigger_type   text NOT NULL,
    status         text NOT NULL,
    scheduled_at   timestamptz NOT NULL,
    triggered_at   timestamptz,
    started_at     timestamptz,
    finished_at    timestamptz,
    attempt        integer NOT NULL DEFAULT 0,
    retry_of       bigint,
    shard_index    integer NOT NULL DEFAULT 0,
    shard_total    integer NOT NULL DEFAULT 0,
    worker_id      text NOT NULL DEFAULT '',
    -- params is NULL when the run uses its job's params.
    params         text,
    message        text NOT NULL DEFAULT '',
    stream_seq     bigint,
    recorded_at    timestamptz,
    parent_run     bigint,
    alarm_status   text NOT NULL DEFAULT 'none',
    alarm_error    text NOT NULL DEFAULT '',
    alarm_attempts integer NOT NULL DEFAULT 0,
    alarm_sent     text[] NOT NULL DEFAULT '{}',
    alarm_next_at  timestamptz,
    PRIMARY KEY (id, scheduled_at),
    -- Planning is idempotent: one run per fire (it contains the partition
    -- key, so it stays a real unique constraint and the ON CONFLICT target).
    UNIQUE (job_id, scheduled_at, shard_index, attempt)
) PARTITION BY RANGE (scheduled_at);

CREATE TABLE job_runs_default PARTITION OF job_runs DEFAULT;

-- Planned but not yet published: what a shard's owner fires and recovers.
CREATE INDEX job_runs_planned ON job_runs (shard, scheduled_at) WHERE status = 'SCHEDULED';
-- Runs written SCHEDULED by something other than the planner.
CREATE INDEX job_runs_unplanned ON job_runs (shard, scheduled_at)
    WHERE status = 'SCHEDULED' AND trigger_type NOT IN ('schedule', 'misfire');
-- Alarms still to send, for the alarm sender.
CREATE INDEX job_runs_alarm_pending ON job_runs (alarm_next_at) WHERE alarm_status = 'pending';
-- Run search (store.SearchRuns), newest first by (scheduled_at, id): one
-- index per filter that usually narrows most, each ending in the keyset
-- order so a page is read straight off the index. job_runs_job replaces the
-- old (job_id, id DESC): a job's runs are now listed by scheduled time.
CREATE INDEX job_runs_job ON job_runs (job_id, scheduled_at DESC, id DESC);
CREATE INDEX job_runs_group ON job_runs (group_name, scheduled_at DESC, id DESC);
CREATE INDEX job_runs_status ON job_runs (status, scheduled_at DESC, id DESC);
-- job_runs_time serves searches without any of those filters (all runs, or
-- a time range). Its predicate is one that only such a search states (see
-- store.searchSQL): the planner must not pick it for a filtered search,
-- where it would read the index in time order and filter, on the estimate
-- that matches are spread evenly, while failures (say) come in bursts: a
-- partition may then be read almost whole to find its first match.
CREATE INDEX job_runs_time ON job_runs (scheduled_at DESC, id DESC) WHERE scheduled_at > '-infinity';
-- Trigger types other than schedule are rare: a partial index serves a
-- search for them without costing the common insert anything.
CREATE INDEX job_runs_trigger ON job_runs (trigger_type, scheduled_at DESC, id DESC)
    WHERE trigger_type <> 'schedule';

-- jetjob_create_run_partition creates the partition of one UTC day unless
-- it exists, moving the rows job_runs_default holds for that day into it,
-- all in the caller's transaction. It returns the number of rows moved, or
-- -1 when the partition already existed.
--
-- The table is created on its own and then attached, rather than with
-- CREATE TABLE ... PARTITION OF: ATTACH takes only a SHARE UPDATE EXCLUSIVE
-- lock on job_runs, so the hot path's inserts and updates go on meanwhile
-- (the default partition is locked while it is checked; it is small).
CREATE FUNCTION jetjob_create_run_partition(day date) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    part  text := 'job_runs_p' || to_char(day, 'YYYYMMDD');
    lo    timestamptz := day::timestamp AT TIME ZONE 'UTC';
    hi    timestamptz := (day + 1)::timestamp AT TIME ZONE 'UTC';
    moved bigint;
BEGIN
    IF to_regclass(part) IS NOT NULL THEN
        RETURN -1;
    END IF;
    EXECUTE format('CREATE TABLE %I (LIKE job_runs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part);
    -- The check lets ATTACH skip scanning the new table.
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (scheduled_at >= %L AND scheduled_at < %L)',
        part, part || '_range', lo, hi);
    EXECUTE format('WITH moved AS (DELETE FROM job_runs_default WHERE scheduled_at >= %L AND scheduled_at < %L RETURNING *)
        INSERT INTO %I SELECT * FROM moved', lo, hi, part);
    GET DIAGNOSTICS moved = ROW_COUNT;
    EXECUTE format('ALTER TABLE job_runs ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', part, part || '_range');
    RETURN moved;
END
$$;

-- A partition for every day the old table has rows of, and for today and
-- the next 7 days; then the rows move over with their ids. Days older than
-- the retention are rolled up and dropped by the first maintenance round.
SELECT jetjob_create_run_partition(d) FROM (
    SELECT DISTINCT (scheduled_at AT TIME ZONE 'UTC')::date AS d FROM job_runs_unpartitioned
    UNION
    SELECT ((now() AT TIME ZONE 'UTC')::date + i) FROM generate_series(0, 7) AS i
) days ORDER BY d;

INSERT INTO job_runs (id, job_id, group_name, shard, trigger_type, status, scheduled_at, triggered_at,
        started_at, finished_at, attempt, retry_of, shard_index, shard_total, worker_id, params, message,
        stream_seq, recorded_at, parent_run, alarm_status, alarm_error, alarm_attempts, alarm_sent, alarm_next_at)
    OVERRIDING SYSTEM VALUE
    SELECT id, job_id, group_name, shard, trigger_type, status, scheduled_at, triggered_at,
        started_at, finished_at, attempt, retry_of, shard_index, shard_total, worker_id, params, message,
        stream_seq, recorded_at, parent_run, alarm_status, alarm_error, alarm_attempts, alarm_sent, alarm_next_at
    FROM job_runs_unpartitioned;

-- The id sequence goes on where the old one stopped (ids handed out but
-- rolled back included), never below a copied id.
SELECT setval(pg_get_serial_sequence('job_runs', 'id'),
    greatest((SELECT last_value FROM job_runs_unpartitioned_id_seq), (SELECT coalesce(max(id), 0) FROM job_runs), 1),
    (SELECT is_called FROM job_runs_unpartitioned_id_seq) OR EXISTS (SELECT 1 FROM job_runs));

DROP TABLE job_runs_unpartitioned;

-- The daily report: per UTC day (of scheduled_at), job and status, the
-- number of runs and their durations (started_at → finished_at, runs with
-- both set). It outlives the partitions it was computed from.
CREATE TABLE run_stats_daily (
    day        date NOT NULL,
    job_id     bigint NOT NULL,
    group_name text NOT NULL,
    status     text NOT NULL,
    runs       bigint NOT NULL,
    -- timed_runs: runs with a duration; the percentiles are over them
    -- (NULL when there are none).
    timed_runs bigint NOT NULL,
    p50_ms     double precision,
    p95_ms     double precision,
    p99_ms     double precision,
    max_ms     double precision,
    PRIMARY KEY (day, job_id, group_name, status)
);

-- Which days the rollup covers: a day without runs has no row in
-- run_stats_daily but is covered all the same. Retention drops a day's
-- partition only when it is listed here. open_runs counts the runs that were
-- not yet terminal when the day was rolled up: such a day is rolled up again
-- on later rounds until they have ended (or the day is dropped).
CREATE TABLE run_stats_days (
    day          date PRIMARY KEY,
    runs         bigint NOT NULL,
    open_runs    bigint NOT NULL,
    rolled_up_at timestamptz NOT NULL DEFAULT now()
);
