package store

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/pgerr"
)

// Users, grants, API keys and sessions: who may use the API (package auth
// decides what they may do). Every change records an audit row in its
// transaction; secrets never reach these tables in clear.

// ErrBadCredentials is returned for an unknown, revoked or expired key or
// session, or a disabled user: the request is unauthenticated.
var ErrBadCredentials = errors.New("invalid, revoked or expired credentials")

// touchEvery is how stale last_used_at / last_seen_at may get before a
// request writes it: one write per key or session a minute, not one per
// request.
const touchEvery = time.Minute

// User is a login user with their grants.
type User struct {
	Name        string
	DisplayName string
	// PasswordHash is the argon2id PHC string ("" for none).
	PasswordHash string
	Admin        bool
	Disabled     bool
	Grants       []Grant
	CreatedAt    time.Time
	LastLoginAt  *time.Time
	// Provider is the identity provider a federated user signs in
	// through ("" for a local user): such a user has no password, and
	// their admin flag and grants are the provider's groups mapped at
	// each sign-in (package sso).
	Provider string
	// Language is the console's language the user chose ("" for none:
	// the browser's).
	Language string
}

// Grant is a user's role on a group.
type Grant struct {
	Group   string `json:"group"`
	Role    string `json:"role"`
	Scripts bool   `json:"scripts,omitempty"`
}

// userAudit is a user as the audit log keeps it: never the hash.
type userAudit struct {
	Name        string  `json:"name"`
	DisplayName string  `json:"display_name,omitempty"`
	Language    string  `json:"language,omitempty"`
	Admin       bool    `json:"admin"`
	Disabled    bool    `json:"disabled"`
	Grants      []Grant `json:"grants"`
	// Password is "set" on create; on update "changed" (by the user, who
	// gave the current one) or "reset" (by an admin).
	Password string `json:"password,omitempty"`
	// Revoked counts the sessions ended and keys revoked by an update
	// with RevokeCredentials.
	Revoked *revokedCredentials `json:"revoked,omitempty"`
}

// revokedCredentials is what an update with RevokeCredentials took away.
type revokedCredentials struct {
	Sessions int64 `json:"sessions"`
	Keys     int64 `json:"keys"`
}

func userDoc(u User) *userAudit {
	return &userAudit{Name: u.Name, DisplayName: u.DisplayName, Language: u.Language, Admin: u.Admin, Disabled: u.Disabled, Grants: nonNil(u.Grants)}
}

const userColumns = `name, display_name, password_hash, admin, disabled, created_at, last_login_at, coalesce(federated_provider, ''), language`

func scanUser(row pgx.Row) (User, error) {
	var u User
	err := row.Scan(&u.Name, &u.DisplayName, &u.PasswordHash, &u.Admin, &u.Disabled, &u.CreatedAt, &u.LastLoginAt, &u.Provider, &u.Language)
	return u, err
}

// dbtx is a pool or a transaction.
type dbtx interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func getUser(ctx context.Context, db dbtx, name string, lock bool) (User, error) {
	sql := `SELECT ` + userColumns + ` FROM users WHERE name = $1`
	if lock {
		sql += ` FOR UPDATE`
	}
	u, err := scanUser(db.QueryRow(ctx, sql, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return u, fmt.Errorf("user %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return u, fmt.Errorf("get user %q: %w", name, err)
	}
	u.Grants, err = grantsOf(ctx, db, name)
	return u, err
}

func grantsOf(ctx context.Context, db dbtx, name string) ([]Grant, error) {
	rows, _ := db.Query(ctx, `SELECT group_name, role, scripts FROM user_grants WHERE user_name = $1 ORDER BY group_name`, name)
	gs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Grant, error) {
		var g Grant
		err := r.Scan(&g.Group, &g.Role, &g.Scripts)
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("grants of user %q: %w", name, err)
	}
	return gs, nil
}

// GetUser returns a user with their grants.
func (s *Store) GetUser(ctx context.Context, name string) (User, error) {
	return getUser(ctx, s.pool, name, false)
}

// ListUsers returns every user by name, with their grants.
func (s *Store) ListUsers(ctx context.Context) ([]User, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+userColumns+` FROM users ORDER BY name`)
	us, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (User, error) { return scanUser(r) })
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	rows, _ = s.pool.Query(ctx, `SELECT user_name, group_name, role, scripts FROM user_grants ORDER BY user_name, group_name`)
	byUser := map[string][]Grant{}
	_, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{}, error) {
		var u string
		var g Grant
		err := r.Scan(&u, &g.Group, &g.Role, &g.Scripts)
		byUser[u] = append(byUser[u], g)
		return struct{}{}, err
	})
	if err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	for i := range us {
		us[i].Grants = byUser[us[i].Name]
	}
	return us, nil
}

// CreateUser stores a user (PasswordHash already hashed) with their grants,
// recording a user.create by a. ErrConflict if the name is taken,
// ErrNotFound if a grant names an unknown group.
func (s *Store) CreateUser(ctx context.Context, a Actor, u User) (User, error) {
	var out User
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO users (name, display_name, password_hash, admin, disabled) VALUES ($1, $2, $3, $4, $5)`,
			u.Name, u.DisplayName, u.PasswordHash, u.Admin, u.Disabled)
		if pgerr.Unique(err) {
			return fmt.Errorf("user %q: %w", u.Name, ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("create user %q: %w", u.Name, err)
		}
		for _, g := range u.Grants {
			if err := putGrant(ctx, tx, u.Name, g); err != nil {
				return err
			}
		}
		if out, err = getUser(ctx, tx, u.Name, false); err != nil {
			return err
		}
		doc := userDoc(out)
		if u.PasswordHash != "" {
			doc.Password = "set"
		}
		return writeAudit(ctx, tx, a, "user.create", userTarget(u.Name), "", nil, doc)
	})
	return out, err
}

// UserChange is a partial update of a user: the fields set change.
type UserChange struct {
	DisplayName  *string
	Language     *string
	PasswordHash *string
	// PasswordReset says an admin set PasswordHash for another user (the
	// audit entry says "reset"), not the user with their current one
	// ("changed").
	PasswordReset bool
	Admin         *bool
	Disabled      *bool
	// RevokeCredentials ends every session of the user and revokes every
	// API key of theirs.
	RevokeCredentials bool
}

// UpdateUser applies ch, recording a user.update by a. Disabling a user or
// changing their password ends their sessions; RevokeCredentials also
// revokes their keys.
func (s *Store) UpdateUser(ctx context.Context, a Actor, name string, ch UserChange) (User, error) {
	var out User
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := getUser(ctx, tx, name, true)
		if err != nil {
			return err
		}
		if ch.PasswordHash != nil && cur.Provider != "" {
			return fmt.Errorf("user %q signs in through %s and has no password: %w", name, cur.Provider, ErrInvalid)
		}
		next := cur
		if ch.DisplayName != nil {
			next.DisplayName = *ch.DisplayName
		}
		if ch.Language != nil {
			next.Language = *ch.Language
		}
		if ch.PasswordHash != nil {
			next.PasswordHash = *ch.PasswordHash
		}
		if ch.Admin != nil {
			next.Admin = *ch.Admin
		}
		if ch.Disabled != nil {
			next.Disabled = *ch.Disabled
		}
		if _, err := tx.Exec(ctx, `UPDATE users SET display_name = $2, password_hash = $3, admin = $4, disabled = $5, language = $6 WHERE name = $1`,
			name, next.DisplayName, next.PasswordHash, next.Admin, next.Disabled, next.Language); err != nil {
			return fmt.Errorf("update user %q: %w", name, err)
		}
		var revoked revokedCredentials
		if (next.Disabled && !cur.Disabled) || ch.PasswordHash != nil || ch.RevokeCredentials {
			tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE user_name = $1`, name)
			if err != nil {
				return fmt.Errorf("end sessions of user %q: %w", name, err)
			}
			revoked.Sessions = tag.RowsAffected()
		}
		if ch.RevokeCredentials {
			tag, err := tx.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE user_name = $1 AND revoked_at IS NULL`, name)
			if err != nil {
				return fmt.Errorf("revoke keys of user %q: %w", name, err)
			}
			revoked.Keys = tag.RowsAffected()
		}
		out = next
		after := userDoc(next)
		switch {
		case ch.PasswordHash != nil && ch.PasswordReset:
			after.Password = "reset"
		case ch.PasswordHash != nil:
			after.Password = "changed"
		}
		if ch.RevokeCredentials {
			after.Revoked = &revoked
		}
		return writeAudit(ctx, tx, a, "user.update", userTarget(name), "", userDoc(cur), after)
	})
	return out, err
}

// DeleteUser removes a user with their grants, keys and sessions,
// recording a user.delete by a.
func (s *Store) DeleteUser(ctx context.Context, a Actor, name string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := getUser(ctx, tx, name, true)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM users WHERE name = $1`, name); err != nil {
			return fmt.Errorf("delete user %q: %w", name, err)
		}
		return writeAudit(ctx, tx, a, "user.delete", userTarget(name), "", userDoc(cur), nil)
	})
}

func putGrant(ctx context.Context, tx pgx.Tx, user string, g Grant) error {
	_, err := tx.Exec(ctx, `INSERT INTO user_grants (user_name, group_name, role, scripts) VALUES ($1, $2, $3, $4)
		ON CONFLICT (user_name, group_name) DO UPDATE SET role = excluded.role, scripts = excluded.scripts`,
		user, g.Group, g.Role, g.Scripts)
	if pgerr.ForeignKey(err) {
		return fmt.Errorf("group %q: %w", g.Group, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("grant %s on %q to %q: %w", g.Role, g.Group, user, err)
	}
	return nil
}

// SetGrant gives user role g.Role on g.Group, replacing their grant there,
// and records a grant.set by a. ErrNotFound for an unknown user or group.
func (s *Store) SetGrant(ctx context.Context, a Actor, user string, g Grant) (User, error) {
	var out User
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := getUser(ctx, tx, user, true)
		if err != nil {
			return err
		}
		var before *Grant
		for _, old := range cur.Grants {
			if old.Group == g.Group {
				before = &old
			}
		}
		if err := putGrant(ctx, tx, user, g); err != nil {
			return err
		}
		if out, err = getUser(ctx, tx, user, false); err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "grant.set", userTarget(user), g.Group, before, g)
	})
	return out, err
}

// DeleteGrant removes user's grant on group, recording a grant.delete by
// a; ErrNotFound when there is none.
func (s *Store) DeleteGrant(ctx context.Context, a Actor, user, group string) (User, error) {
	var out User
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var g Grant
		err := tx.QueryRow(ctx, `DELETE FROM user_grants WHERE user_name = $1 AND group_name = $2 RETURNING group_name, role, scripts`,
			user, group).Scan(&g.Group, &g.Role, &g.Scripts)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("grant of user %q on group %q: %w", user, group, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("delete grant of user %q on group %q: %w", user, group, err)
		}
		if out, err = getUser(ctx, tx, user, false); err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "grant.delete", userTarget(user), group, g, nil)
	})
	return out, err
}

// Key is an API key without its secret: the API's document as it is,
// because the audit log records a key (key.create, key.revoke) in the
// shape the API shows it, and a second copy of the fields could drift
// from it.
type Key = apiv1.Key

const keyColumns = `id, prefix, name, user_name, created_at, expires_at, last_used_at, revoked_at`

func scanKey(row pgx.Row) (Key, error) {
	var k Key
	err := row.Scan(&k.ID, &k.Prefix, &k.Name, &k.User, &k.CreatedAt, &k.ExpiresAt, &k.LastUsedAt, &k.RevokedAt)
	return k, err
}

// CreateKey stores a key of k.User with the hash of its secret, recording a
// key.create by a. ErrNotFound for an unknown user; ErrConflict if the
// prefix is taken (draw another key).
func (s *Store) CreateKey(ctx context.Context, a Actor, k Key, secretHash []byte) (Key, error) {
	var out Key
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanKey(tx.QueryRow(ctx, `INSERT INTO api_keys (prefix, secret_sha256, user_name, name, expires_at)
			VALUES ($1, $2, $3, $4, $5) RETURNING `+keyColumns, k.Prefix, secretHash, k.User, k.Name, k.ExpiresAt))
		switch {
		case pgerr.ForeignKey(err):
			return fmt.Errorf("user %q: %w", k.User, ErrNotFound)
		case pgerr.Unique(err):
			return fmt.Errorf("key prefix %q: %w", k.Prefix, ErrConflict)
		case err != nil:
			return fmt.Errorf("create key: %w", err)
		}
		return writeAudit(ctx, tx, a, "key.create", keyTarget(out.ID), "", nil, out)
	})
	return out, err
}

// ListKeys returns a user's keys, revoked ones included, by id.
func (s *Store) ListKeys(ctx context.Context, user string) ([]Key, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE user_name = $1 ORDER BY id`, user)
	ks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Key, error) { return scanKey(r) })
	if err != nil {
		return nil, fmt.Errorf("list keys of %q: %w", user, err)
	}
	return ks, nil
}

// GetKey returns one key.
func (s *Store) GetKey(ctx context.Context, id int64) (Key, error) {
	return rowOf(ctx, s.pool, "key", `SELECT `+keyColumns+` FROM api_keys WHERE id = $1`, id, scanKey)
}

// RevokeKey revokes a key, recording a key.revoke by a. Revoking a revoked
// key changes nothing and records nothing.
func (s *Store) RevokeKey(ctx context.Context, a Actor, id int64) (Key, error) {
	var out Key
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := rowOf(ctx, tx, "key", `SELECT `+keyColumns+` FROM api_keys WHERE id = $1 FOR UPDATE`, id, scanKey)
		if err != nil {
			return err
		}
		if cur.RevokedAt != nil {
			out = cur
			return nil
		}
		if out, err = scanKey(tx.QueryRow(ctx, `UPDATE api_keys SET revoked_at = now() WHERE id = $1 RETURNING `+keyColumns, id)); err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "key.revoke", keyTarget(id), "", cur, out)
	})
	if err != nil {
		return out, fmt.Errorf("revoke key %d: %w", id, err)
	}
	return out, nil
}

// UserByKey authenticates an API key: the key's user (with grants) and the
// key, or ErrBadCredentials when the key is unknown, its secret wrong, it
// is revoked or expired, or its user disabled. It notes the key's use (at
// most once a minute).
func (s *Store) UserByKey(ctx context.Context, prefix string, secretHash []byte) (User, Key, error) {
	var k Key
	var hash []byte
	var live bool
	err := s.pool.QueryRow(ctx, `SELECT `+keyColumns+`, secret_sha256,
			revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
		FROM api_keys WHERE prefix = $1`, prefix).Scan(&k.ID, &k.Prefix, &k.Name, &k.User, &k.CreatedAt,
		&k.ExpiresAt, &k.LastUsedAt, &k.RevokedAt, &hash, &live)
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, k, ErrBadCredentials
	}
	if err != nil {
		return User{}, k, fmt.Errorf("look up key %s: %w", prefix, err)
	}
	if subtle.ConstantTimeCompare(hash, secretHash) != 1 || !live {
		return User{}, k, ErrBadCredentials
	}
	u, err := s.GetUser(ctx, k.User)
	if err != nil {
		return u, k, err
	}
	if u.Disabled {
		return u, k, ErrBadCredentials
	}
	if _, err := s.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = now()
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - $2 * interval '1 microsecond')`, k.ID, touchEvery.Microseconds()); err != nil {
		return u, k, fmt.Errorf("note use of key %s: %w", prefix, err)
	}
	return u, k, nil
}

// Session is a web console session (never its token).
type Session struct {
	// ID is a short public name: the start of the token's hash.
	ID        string
	User      string
	CreatedAt time.Time
	ExpiresAt time.Time
	// Provider is the identity provider the session was started
	// through ("" for a password).
	Provider string
}

func sessionID(hash []byte) string { return hex.EncodeToString(hash)[:12] }

// CreateSession starts a session of user (a login; provider is the
// identity provider it went through, "" for a password), valid until
// absolute from now at the latest, notes the login time, and records a
// session.login by a.
func (s *Store) CreateSession(ctx context.Context, a Actor, user, provider string, hash []byte, absolute time.Duration) (Session, error) {
	out := Session{ID: sessionID(hash), User: user, Provider: provider}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO sessions (id_sha256, user_name, expires_at, client, provider)
			VALUES ($1, $2, now() + $3 * interval '1 microsecond', $4, $5) RETURNING created_at, expires_at`,
			hash, user, absolute.Microseconds(), a.Client, provider).Scan(&out.CreatedAt, &out.ExpiresAt)
		if err != nil {
			return fmt.Errorf("create session of %q: %w", user, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE users SET last_login_at = now() WHERE name = $1`, user); err != nil {
			return fmt.Errorf("note login of %q: %w", user, err)
		}
		return writeAudit(ctx, tx, a, "session.login", sessionTarget(user), "", nil,
			map[string]any{"session": out.ID, "expires_at": out.ExpiresAt})
	})
	return out, err
}

// UserBySession authenticates a session token's hash: its user (with
// grants) and the session, or ErrBadCredentials when the session is
// unknown, past its absolute expiry, idle longer than idle, or its user
// disabled. It notes the activity (at most once a minute).
func (s *Store) UserBySession(ctx context.Context, hash []byte, idle time.Duration) (User, Session, error) {
	var ss Session
	err := s.pool.QueryRow(ctx, `UPDATE sessions SET last_seen_at = CASE
			WHEN last_seen_at < now() - $3 * interval '1 microsecond' THEN now() ELSE last_seen_at END
		WHERE id_sha256 = $1 AND expires_at > now() AND last_seen_at > now() - $2 * interval '1 microsecond'
		RETURNING user_name, created_at, expires_at, provider`, hash, idle.Microseconds(), touchEvery.Microseconds()).Scan(&ss.User, &ss.CreatedAt, &ss.ExpiresAt, &ss.Provider)
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, ss, ErrBadCredentials
	}
	if err != nil {
		return User{}, ss, fmt.Errorf("look up session: %w", err)
	}
	ss.ID = sessionID(hash)
	u, err := s.GetUser(ctx, ss.User)
	if err != nil {
		return u, ss, err
	}
	if u.Disabled {
		return u, ss, ErrBadCredentials
	}
	return u, ss, nil
}

// DeleteSession ends a session (a logout), recording a session.logout by
// a; an unknown session changes and records nothing. Expired sessions of
// anyone are removed on the way.
func (s *Store) DeleteSession(ctx context.Context, a Actor, hash []byte) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var user string
		err := tx.QueryRow(ctx, `DELETE FROM sessions WHERE id_sha256 = $1 RETURNING user_name`, hash).Scan(&user)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("delete session: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE expires_at < now()`); err != nil {
			return fmt.Errorf("delete expired sessions: %w", err)
		}
		return writeAudit(ctx, tx, a, "session.logout", sessionTarget(user), "", map[string]any{"session": sessionID(hash)}, nil)
	})
}
