-- jetjob schema, version 6: schedule operations (issue #14) — per-job
-- misfire threshold and catch-up cap, jitter, start/end bounds, pause
-- notes, and backfill operations.

ALTER TABLE jobs
    -- NULL: the scheduler's cluster-wide default (--misfire-threshold,
    -- --max-catchup).
    ADD COLUMN misfire_threshold_ms bigint CHECK (misfire_threshold_ms >= 0),
    ADD COLUMN max_catchup          integer CHECK (max_catchup >= 1),
    -- Each fire runs at its nominal time plus a deterministic offset in
    -- [0, jitter) (package scheduler/timing); next_fire_at stays nominal.
    ADD COLUMN jitter_ms            bigint NOT NULL DEFAULT 0 CHECK (jitter_ms >= 0),
    -- No fire before start_at nor after end_at.
    ADD COLUMN start_at             timestamptz,
    ADD COLUMN end_at               timestamptz CHECK (end_at IS NULL OR start_at IS NULL OR start_at < end_at),
    -- Why and by whom the job was disabled; cleared when it is enabled.
    ADD COLUMN paused_note          text NOT NULL DEFAULT '',
    ADD COLUMN paused_at            timestamptz,
    ADD COLUMN paused_by            text NOT NULL DEFAULT '';

-- A backfill: the fires of a job's schedule in [range_from, range_to),
-- written as runs (trigger type backfill) a few at a time by whichever
-- scheduler claims the row (package scheduler/backfill). cursor_at is the
-- last fire already written: the next one comes after it.
CREATE TABLE backfills (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    group_name  text NOT NULL,
    range_from  timestamptz NOT NULL,
    range_to    timestamptz NOT NULL CHECK (range_from < range_to),
    planned     integer NOT NULL CHECK (planned >= 0),
    triggered   integer NOT NULL DEFAULT 0,
    -- Fires that already had a run (of the schedule, or an earlier
    -- backfill): not run again.
    existing    integer NOT NULL DEFAULT 0,
    cursor_at   timestamptz,
    state       text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'completed', 'cancelled')),
    created_by  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX backfills_job ON backfills (job_id, id DESC);
CREATE INDEX backfills_running ON backfills (id) WHERE state = 'running';

-- The backfill a run belongs to: what an operation's counts and its
-- in-flight bound read.
ALTER TABLE job_runs ADD COLUMN backfill_id bigint;
CREATE INDEX job_runs_backfill ON job_runs (backfill_id, status) WHERE backfill_id IS NOT NULL;
