-- jetjob schema, version 7: block strategy concurrent.

ALTER TABLE jobs
    -- At most this many runs of a job with block strategy concurrent
    -- execute at once across the group (worker/slots.go); 0 means no cap.
    -- The API refuses it with any other block strategy.
    ADD COLUMN max_concurrency integer NOT NULL DEFAULT 0 CHECK (max_concurrency >= 0);
