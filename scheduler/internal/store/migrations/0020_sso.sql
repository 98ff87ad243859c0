-- jetjob schema, version 20: sign-in through the company's identity
-- provider (OIDC, LDAP; issue #32, package scheduler/internal/sso).

-- A federated user signs in only through their provider: the pair
-- (provider, subject) is who they are there (an OIDC "sub", an LDAP DN),
-- the name is what jetjob calls them. They have no password
-- (password_hash stays ''); their admin flag and grants are the
-- provider's groups mapped at each sign-in.
ALTER TABLE users
    ADD COLUMN federated_provider text,
    ADD COLUMN federated_subject  text,
    ADD CONSTRAINT users_federated_pair CHECK ((federated_provider IS NULL) = (federated_subject IS NULL)),
    ADD CONSTRAINT users_federated_no_password CHECK (federated_provider IS NULL OR password_hash = '');
CREATE UNIQUE INDEX users_federated ON users (federated_provider, federated_subject)
    WHERE federated_provider IS NOT NULL;

-- The provider a session was started through ('' for a password):
-- logout sends the browser to that provider's end_session_endpoint.
ALTER TABLE sessions ADD COLUMN provider text NOT NULL DEFAULT '';

-- Sign-ins under way: an authorization request sent to a provider (its
-- state, by SHA-256, with the nonce and PKCE verifier to check the answer
-- by), or a device authorization a CLI polls (by the SHA-256 of the
-- handle the CLI holds). A row is taken (deleted) by the one answer that
-- uses it, so a replayed state finds nothing, on any scheduler.
CREATE TABLE sso_pending (
    id_sha256    bytea PRIMARY KEY,
    provider     text NOT NULL,
    nonce        text NOT NULL DEFAULT '',
    verifier     text NOT NULL DEFAULT '',
    redirect_uri text NOT NULL DEFAULT '',
    next         text NOT NULL DEFAULT '',
    device_code  text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX sso_pending_expires ON sso_pending (expires_at);
