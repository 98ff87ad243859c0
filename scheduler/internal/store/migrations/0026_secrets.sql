-- jetjob schema, version 26: secrets for jobs (issue #34, docs/jobs.md "Secrets").
--
-- A secret is a named value of a group, stored encrypted with AES-256-GCM
-- under one key of the schedulers' keyring (key_id names it, so a rotated
-- keyring still opens older rows until `jetjob-scheduler secrets
-- rotate-key` re-encrypts them). The value is never answered by the API;
-- only the scheduler answering a worker's request for a running run
-- decrypts it. The name and group are authenticated as the cipher's
-- additional data, so a row's ciphertext copied onto another row does not
-- open.
CREATE TABLE secrets (
    id          bigserial PRIMARY KEY,
    group_name  text NOT NULL REFERENCES job_groups (name) ON DELETE CASCADE,
    name        text NOT NULL,
    key_id      text NOT NULL,
    nonce       bytea NOT NULL,
    ciphertext  bytea NOT NULL,
    version     integer NOT NULL DEFAULT 1,
    created_by  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (group_name, name)
);

-- A job's references to its group's secrets: secret_env maps an
-- environment variable of the command to a secret's name; secret_names is
-- every name the job references (secret_env's values and the
-- ${secret:NAME} placeholders of its params), written with the job: what a
-- worker may be given for a run of it, and what a trigger's "secrets" flag
-- is computed from.
ALTER TABLE jobs ADD COLUMN secret_env jsonb NOT NULL DEFAULT '{}';
ALTER TABLE jobs ADD COLUMN secret_names text[] NOT NULL DEFAULT '{}';
