package apiv1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Access control: users, roles, grants, API keys, sessions and the audit log.
//
//	GET    /api/v1/me                          → Me (who the request authenticates as)
//	GET    /api/v1/users                       → UserList                  (admin)
//	POST   /api/v1/users             UserCreate → 201 User                 (admin)
//	GET    /api/v1/users/{name}                → User                      (admin, or the user)
//	PATCH  /api/v1/users/{name}      UserPatch → User                      (admin; the user: display name, password, revoke_credentials)
//	DELETE /api/v1/users/{name}                → 204                       (admin)
//	POST   /api/v1/users/{name}/grants Grant   → User                      (admin; replaces the group's grant)
//	DELETE /api/v1/users/{name}/grants?group=G → User                      (admin)
//	GET    /api/v1/keys?user=                  → KeyList (own keys; admin: anyone's)
//	POST   /api/v1/keys              KeyCreate → 201 CreatedKey (the secret, shown once)
//	DELETE /api/v1/keys/{id}                   → 204 (revokes; own keys, admin: any)
//	POST   /api/v1/login             LoginRequest → Me + session cookie
//	POST   /api/v1/logout                      → 204 (ends the cookie's session)
//	GET    /api/v1/audit?actor=&target=&action=&group=&from=&to=&limit=&before= → AuditList (admin)
//	GET    /api/v1/jobs/{id}/history?limit=&before= → AuditList (the job's revisions)
//
// A request without valid credentials answers 401; one whose principal
// lacks the permission answers 403 with the permission named in Error.
// Jobs and runs of groups the caller cannot read answer 404, as if they
// did not exist.

// Roles of a grant. An admin (User.Admin) needs no grant.
const (
	// RoleViewer reads the group's jobs, runs, logs, workers and stats.
	RoleViewer = "viewer"
	// RoleOperator also creates, edits, enables, disables, triggers,
	// kills and deletes the group's jobs (a job whose handler runs
	// commands needs Grant.Scripts as well).
	RoleOperator = "operator"
)

// Grant gives a user a role on one group.
type Grant struct {
	Group string `json:"group"`
	// Role is viewer or operator.
	Role string `json:"role"`
	// Scripts allows creating and editing jobs whose handler runs
	// commands (shell, and the group's command_handlers), and
	// triggering them with other params. Only with role operator.
	Scripts bool `json:"scripts,omitempty"`
}

// User is a login user (never with their password).
type User struct {
	Name        string     `json:"name"`
	DisplayName string     `json:"display_name,omitempty"`
	Admin       bool       `json:"admin"`
	Disabled    bool       `json:"disabled"`
	Grants      []Grant    `json:"grants"`
	CreatedAt   time.Time  `json:"created_at"`
	LastLoginAt *time.Time `json:"last_login_at,omitempty"`
	// Provider is the identity provider a federated user signs in
	// through (docs/sso.md): they have no password, and their admin flag
	// and grants are set from the provider's groups at each sign-in.
	Provider string `json:"provider,omitempty"`
	// Language is the console's language the user chose: "en", "zh-CN",
	// or empty for none (the console follows the browser).
	Language string `json:"language,omitempty"`
}

// UserList answers GET /users.
type UserList struct {
	Users []User `json:"users"`
}

// UserCreate is the body of POST /users.
type UserCreate struct {
	// Name: 1-64 of [A-Za-z0-9_.@-].
	Name        string `json:"name"`
	DisplayName string `json:"display_name,omitempty"`
	// Password: at least 12 characters. Empty creates a user who can
	// only use API keys (an admin creates them).
	Password string  `json:"password,omitempty"`
	Admin    bool    `json:"admin,omitempty"`
	Grants   []Grant `json:"grants,omitempty"`
}

// UserPatch is the body of PATCH /users/{name}: the fields set change.
// A user may change their own display name and password; the rest needs
// an admin. Disabling a user ends their sessions (their keys stop working
// while they are disabled).
//
// Changing one's own password needs the current one (CurrentPassword),
// checked like a login: limited per user and address, a wrong one answers
// 403 and counts as a failed login. An admin resets another user's
// password without it; the audit entry (user.update) says "changed" for
// the one and "reset" for the other. A user without a password (API keys
// only) gets one from an admin. Any password change ends every session of
// the user, the caller's own included: they sign in again with the new
// password.
type UserPatch struct {
	DisplayName *string `json:"display_name,omitempty"`
	// Language sets the console's language: "en", "zh-CN", or "" to
	// follow the browser's. The user sets their own.
	Language *string `json:"language,omitempty"`
	Password *string `json:"password,omitempty"`
	// CurrentPassword is the user's password now: required, and only
	// taken, with Password when the caller changes their own.
	CurrentPassword *string `json:"current_password,omitempty"`
	Admin           *bool   `json:"admin,omitempty"`
	Disabled        *bool   `json:"disabled,omitempty"`
	// RevokeCredentials ends every session of the user and revokes every
	// API key of theirs, the caller's own session or key included (an
	// admin's for another user, or the user's own: "sign out everywhere",
	// with or without a new password). The audit entry counts them.
	RevokeCredentials bool `json:"revoke_credentials,omitempty"`
}

// Key is an API key, without its secret.
type Key struct {
	ID int64 `json:"id"`
	// Prefix is the key's public part ("jj_<prefix>_…"): it names the key
	// in listings and in the audit log.
	Prefix     string     `json:"prefix"`
	Name       string     `json:"name"`
	User       string     `json:"user"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// KeyList answers GET /keys.
type KeyList struct {
	Keys []Key `json:"keys"`
}

// KeyCreate is the body of POST /keys.
type KeyCreate struct {
	Name string `json:"name"`
	// User owns the key: empty for the caller; another user needs an admin.
	User string `json:"user,omitempty"`
	// ExpiresAt, when set, ends the key (it must be in the future).
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// CreatedKey answers POST /keys: the only time the secret is shown. Send
// it as "Authorization: Bearer <secret>".
type CreatedKey struct {
	Key
	Secret string `json:"secret"`
}

// Me answers GET /me and POST /login: the principal of the request.
type Me struct {
	Name        string  `json:"name"`
	DisplayName string  `json:"display_name,omitempty"`
	Admin       bool    `json:"admin"`
	Grants      []Grant `json:"grants"`
	// Language is the console's language the user chose (UserPatch), ""
	// for none; empty for a principal that is not a user.
	Language string `json:"language,omitempty"`
	// Auth is how the request authenticated: key, session, bootstrap (the
	// JETJOB_API_TOKEN break-glass key) or none (--insecure-no-auth).
	Auth string `json:"auth"`
	// KeyID and KeyPrefix name the API key used (Auth key).
	KeyID     int64  `json:"key_id,omitempty"`
	KeyPrefix string `json:"key_prefix,omitempty"`
	// SessionExpiresAt is when the session ends at the latest (Auth session).
	SessionExpiresAt *time.Time `json:"session_expires_at,omitempty"`
}

// LoginRequest is the body of POST /login.
type LoginRequest struct {
	Name     string `json:"name"`
	Password string `json:"password"`
	// Provider "ldap" checks the password against the LDAP directory
	// (docs/sso.md); empty: a local user's password.
	Provider string `json:"provider,omitempty"`
}

// AuditEntry is one recorded change.
type AuditEntry struct {
	ID int64     `json:"id"`
	At time.Time `json:"at"`
	// Actor is the user name ("bootstrap" for the JETJOB_API_TOKEN,
	// "anonymous-admin" under --insecure-no-auth).
	Actor string `json:"actor"`
	// Auth is the credential used: "key:<prefix>", "session:<id prefix>",
	// "bootstrap", "none", or "password" for a login (session.login).
	Auth string `json:"auth"`
	// Action is e.g. job.create, job.update, job.enable, job.disable,
	// job.delete, job.trigger, run.kill, run.delete, group.create, group.pause,
	// group.drain, group.resume, group.update, user.create, user.update, user.delete,
	// grant.set, grant.delete, key.create, key.revoke, session.login,
	// session.logout.
	Action string `json:"action"`
	// Target is "<kind>:<id>": job:12, run:99, group:billing, user:alice,
	// key:7.
	Target string `json:"target"`
	// Group is the target's group, when it has one.
	Group string `json:"group,omitempty"`
	// Before and After are the target's documents around the change
	// (absent on create, respectively delete).
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
	// Client is the request's remote address.
	Client string `json:"client,omitempty"`
}

// AuditList answers GET /audit and GET /jobs/{id}/history, newest first.
type AuditList struct {
	Entries []AuditEntry `json:"entries"`
	// Next is the "before" value of the next page (the last id), 0 on
	// the last page.
	Next int64 `json:"next,omitempty"`
}

// FieldChange is one top-level field that an audit entry's change touched:
// its JSON value before and after (empty where the field is absent).
type FieldChange struct {
	Field         string
	Before, After json.RawMessage
}

// Changes lists, by field name, the fields whose values differ between the
// entry's Before and After documents: what a revision did, for the CLI's
// and the console's job history alike. The id and the version are left
// out: the one never changes and the other changes on every revision. A
// create or a delete (one side absent) changes no field; an error means a
// side is not a JSON object.
func (e AuditEntry) Changes() ([]FieldChange, error) {
	if len(e.Before) == 0 || len(e.After) == 0 {
		return nil, nil
	}
	var before, after map[string]json.RawMessage
	if err := json.Unmarshal(e.Before, &before); err != nil {
		return nil, fmt.Errorf("audit entry %d: document before: %w", e.ID, err)
	}
	if err := json.Unmarshal(e.After, &after); err != nil {
		return nil, fmt.Errorf("audit entry %d: document after: %w", e.ID, err)
	}
	fields := slices.Collect(maps.Keys(before))
	for k := range after {
		if _, ok := before[k]; !ok {
			fields = append(fields, k)
		}
	}
	slices.Sort(fields)
	var out []FieldChange
	for _, k := range fields {
		if k == "id" || k == "version" || sameJSON(before[k], after[k]) {
			continue
		}
		out = append(out, FieldChange{Field: k, Before: before[k], After: after[k]})
	}
	return out, nil
}

// sameJSON compares two JSON values as written, white space aside.
func sameJSON(x, y json.RawMessage) bool {
	if len(x) == 0 || len(y) == 0 {
		return len(x) == len(y)
	}
	var cx, cy bytes.Buffer
	if json.Compact(&cx, x) != nil || json.Compact(&cy, y) != nil {
		return bytes.Equal(x, y)
	}
	return bytes.Equal(cx.Bytes(), cy.Bytes())
}
