-- jetjob schema, version 3: what happens after a run ends — retries with
-- backoff, child jobs, alarms.

ALTER TABLE jobs
    -- Retries: a failed, timed-out or lost run is retried while its
    -- attempt < max_retries, after initial * 2^attempt (exponential) or
    -- initial (fixed), capped at max, with up to 20 % random jitter.
    ADD COLUMN retry_backoff    text   NOT NULL DEFAULT 'exponential'
        CHECK (retry_backoff IN ('fixed', 'exponential')),
    ADD COLUMN retry_initial_ms bigint NOT NULL DEFAULT 1000 CHECK (retry_initial_ms >= 0),
    ADD COLUMN retry_max_ms     bigint NOT NULL DEFAULT 300000 CHECK (retry_max_ms >= 0),
    -- Children are triggered when a run of this job succeeds.
    ADD COLUMN child_job_ids    bigint[] NOT NULL DEFAULT '{}',
    -- Alarm targets, after the last attempt fails.
    ADD COLUMN alarm_webhook    text   NOT NULL DEFAULT '',
    ADD COLUMN alarm_emails     text[] NOT NULL DEFAULT '{}';

ALTER TABLE job_runs
    -- When the run's final status was recorded (the applying
    -- transaction's time): end-to-end latency = recorded_at - scheduled_at.
    ADD COLUMN recorded_at    timestamptz,
    -- The run whose success triggered this child run.
    ADD COLUMN parent_run     bigint,
    -- none (no alarm needed), pending, sent, failed.
    ADD COLUMN alarm_status   text NOT NULL DEFAULT 'none',
    ADD COLUMN alarm_error    text NOT NULL DEFAULT '',
    ADD COLUMN alarm_attempts integer NOT NULL DEFAULT 0,
    -- Channels already delivered (webhook, email): a retry resends only
    -- the others, so each channel gets one alarm.
    ADD COLUMN alarm_sent     text[] NOT NULL DEFAULT '{}',
    ADD COLUMN alarm_next_at  timestamptz;

-- Alarms still to send, for the alarm sender.
CREATE INDEX job_runs_alarm_pending ON job_runs (alarm_next_at) WHERE alarm_status = 'pending';
