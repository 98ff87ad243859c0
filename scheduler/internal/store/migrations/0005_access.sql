-- jetjob schema, version 5: users, grants, API keys, sessions, the audit log.
-- See package scheduler/auth for the model and the hashing choices.

-- Handlers of a group that run commands, besides shell: writing their jobs
-- needs the scripts permission.
ALTER TABLE job_groups ADD COLUMN command_handlers text[] NOT NULL DEFAULT '{}';

CREATE TABLE users (
    name          text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.@-]{1,64}$'),
    display_name  text NOT NULL DEFAULT '',
    -- argon2id PHC string; '' means no password: the user only has keys.
    password_hash text NOT NULL DEFAULT '',
    admin         boolean NOT NULL DEFAULT false,
    disabled      boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_login_at timestamptz
);

-- A user's role on a group (xxl-job's per-executor permission). Admins need none.
CREATE TABLE user_grants (
    user_name  text NOT NULL REFERENCES users (name) ON DELETE CASCADE,
    group_name text NOT NULL REFERENCES job_groups (name) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('viewer', 'operator')),
    scripts    boolean NOT NULL DEFAULT false CHECK (NOT scripts OR role = 'operator'),
    PRIMARY KEY (user_name, group_name)
);

-- API keys: the prefix is public (it finds and names the key), only the
-- SHA-256 of the secret is stored. Revoked keys stay, for the audit log.
CREATE TABLE api_keys (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    prefix        text NOT NULL UNIQUE,
    secret_sha256 bytea NOT NULL,
    user_name     text NOT NULL REFERENCES users (name) ON DELETE CASCADE,
    name          text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    last_used_at  timestamptz,
    revoked_at    timestamptz
);
CREATE INDEX api_keys_user ON api_keys (user_name, id);

-- Web console sessions, by the SHA-256 of the cookie's value. A session
-- ends at expires_at (absolute) or after the idle timeout since last_seen_at.
CREATE TABLE sessions (
    id_sha256    bytea PRIMARY KEY,
    user_name    text NOT NULL REFERENCES users (name) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    client       text NOT NULL DEFAULT ''
);
CREATE INDEX sessions_user ON sessions (user_name);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- Every change made through the API, written in the transaction of the
-- change. actor is a name, not a reference: rows outlive their users.
CREATE TABLE audit_log (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT now(),
    actor      text NOT NULL,
    auth       text NOT NULL,
    action     text NOT NULL,
    target     text NOT NULL,
    group_name text,
    before     jsonb,
    after      jsonb,
    client     text NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_target ON audit_log (target, id DESC);
CREATE INDEX audit_log_actor ON audit_log (actor, id DESC);
CREATE INDEX audit_log_action ON audit_log (action, id DESC);
CREATE INDEX audit_log_at ON audit_log (at);
