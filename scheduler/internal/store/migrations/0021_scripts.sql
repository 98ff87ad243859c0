-- jetjob schema, version 21: stored scripts with versions (issue #30),
-- and one-time set-password links.
--
-- A job of handler 'script' runs a script the scheduler stores, as
-- xxl-job's GLUE jobs do: its language and its current version are on the
-- job row (script_source a copy of that version's source, so the planner
-- and a recovery read what a trigger carries without a join), every
-- version in job_script_versions with its remark. Saving a version writes
-- both in one transaction; old versions past the scheduler's
-- --script-versions are pruned there too.
ALTER TABLE jobs
    ADD COLUMN script_language text CHECK (script_language IN ('bash', 'python3', 'python2', 'nodejs', 'php', 'powershell')),
    ADD COLUMN script_version  integer,
    ADD COLUMN script_source   text;

CREATE TABLE job_script_versions (
    job_id     bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    version    integer NOT NULL CHECK (version > 0),
    language   text NOT NULL,
    source     text NOT NULL,
    remark     text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text NOT NULL DEFAULT '',
    PRIMARY KEY (job_id, version)
);

-- A one-time link to set a password (a user imported without one, or an
-- admin's reset): only the SHA-256 of its token is kept; it works once,
-- until expires_at.
CREATE TABLE password_links (
    token_hash bytea PRIMARY KEY,
    user_name  text NOT NULL REFERENCES users (name) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text NOT NULL DEFAULT '',
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX password_links_user ON password_links (user_name);
