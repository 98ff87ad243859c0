-- jetjob schema, version 30: priorities, group caps, concurrency keys and
-- rate limits (issue #33, docs/flow-control.md).
--
-- Every column defaults to "no control", so existing jobs and groups run
-- as before and their triggers carry no flow field.
--
-- jobs.priority orders a job's runs among the runs waiting at their
-- group's cap or their key's cap (higher first). concurrency_key is an
-- expression over a run's params (docs/flow-control.md, "Concurrency
-- keys"); key_cap runs of the job with the same key execute at once.
-- rate_count/rate_period_ms limit the job's starts, key_rate_* the starts
-- per key (0: no limit).
ALTER TABLE jobs
    ADD COLUMN priority           smallint NOT NULL DEFAULT 0 CHECK (priority BETWEEN -100 AND 100),
    ADD COLUMN concurrency_key    text     NOT NULL DEFAULT '',
    ADD COLUMN key_cap            integer  NOT NULL DEFAULT 0 CHECK (key_cap BETWEEN 0 AND 1000),
    ADD COLUMN rate_count         integer  NOT NULL DEFAULT 0 CHECK (rate_count BETWEEN 0 AND 100000),
    ADD COLUMN rate_period_ms     bigint   NOT NULL DEFAULT 0 CHECK (rate_period_ms BETWEEN 0 AND 86400000),
    ADD COLUMN key_rate_count     integer  NOT NULL DEFAULT 0 CHECK (key_rate_count BETWEEN 0 AND 100000),
    ADD COLUMN key_rate_period_ms bigint   NOT NULL DEFAULT 0 CHECK (key_rate_period_ms BETWEEN 0 AND 86400000);

-- A group's cap (max_running: runs of the group executing at once across
-- its workers) and its rate limit (starts of all its jobs' runs).
ALTER TABLE job_groups
    ADD COLUMN max_running    integer NOT NULL DEFAULT 0 CHECK (max_running BETWEEN 0 AND 1000),
    ADD COLUMN rate_count     integer NOT NULL DEFAULT 0 CHECK (rate_count BETWEEN 0 AND 100000),
    ADD COLUMN rate_period_ms bigint  NOT NULL DEFAULT 0 CHECK (rate_period_ms BETWEEN 0 AND 86400000);

-- A run's own priority, set by a manual trigger that asks for one; NULL
-- (every other run) means the job's.
ALTER TABLE job_runs ADD COLUMN priority smallint CHECK (priority BETWEEN -100 AND 100);
