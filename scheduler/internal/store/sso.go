package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/pgerr"
)

// Federated users and sign-ins under way (package sso decides who a
// provider's answer is and what their groups map to; this file keeps it).

// Federated is a user as their identity provider describes them at a
// sign-in, with what the mapping made of their groups.
type Federated struct {
	// Provider and Subject say who they are: the provider's id in the
	// configuration and its stable name for them (OIDC sub, LDAP DN).
	Provider, Subject string
	// Name is the jetjob user name a first sign-in creates.
	Name        string
	DisplayName string
	// Admin and Grants are the mapping's result: they replace the user's.
	Admin  bool
	Grants []Grant
}

// federatedAudit is a federated user as the audit log keeps them.
type federatedAudit struct {
	*userAudit
	Provider string `json:"provider"`
	Subject  string `json:"subject"`
}

// grantsAudit is a user's standing as the mapping sets it.
type grantsAudit struct {
	Admin  bool    `json:"admin"`
	Grants []Grant `json:"grants"`
	// Skipped names the mapped groups that do not exist (yet).
	Skipped []string `json:"skipped,omitempty"`
}

// SyncFederated makes f's user what f says, recording each change by a:
// on a first sign-in it creates the user (user.create, no password);
// afterwards it finds them by (provider, subject) and sets their display
// name, admin flag and grants to f's, so that a group the provider no
// longer lists takes its grant away (grant.sync with before and after,
// only when something changed). Grants on groups that do not exist are
// left out (and named in the audit row). ErrConflict when f.Name is a
// local user's or another identity's; ErrBadCredentials when the user is
// disabled.
func (s *Store) SyncFederated(ctx context.Context, a Actor, f Federated) (User, error) {
	var out User
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var name string
		err := tx.QueryRow(ctx, `SELECT name FROM users WHERE federated_provider = $1 AND federated_subject = $2 FOR UPDATE`,
			f.Provider, f.Subject).Scan(&name)
		created := false
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			_, err = tx.Exec(ctx, `INSERT INTO users (name, display_name, admin, federated_provider, federated_subject) VALUES ($1, $2, false, $3, $4)`,
				f.Name, f.DisplayName, f.Provider, f.Subject)
			if pgerr.Unique(err) {
				return fmt.Errorf("user name %q is taken by a local user or another identity: %w", f.Name, ErrConflict)
			}
			if err != nil {
				return fmt.Errorf("create federated user %q: %w", f.Name, err)
			}
			name, created = f.Name, true
		case err != nil:
			return fmt.Errorf("find federated user %s/%s: %w", f.Provider, f.Subject, err)
		}
		cur, err := getUser(ctx, tx, name, false)
		if err != nil {
			return err
		}
		if cur.Disabled {
			return fmt.Errorf("user %q is disabled: %w", name, ErrBadCredentials)
		}
		if _, err := tx.Exec(ctx, `UPDATE users SET display_name = $2, admin = $3 WHERE name = $1`, name, f.DisplayName, f.Admin); err != nil {
			return fmt.Errorf("update federated user %q: %w", name, err)
		}
		grants, skipped, err := existingGrants(ctx, tx, f.Grants)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM user_grants WHERE user_name = $1`, name); err != nil {
			return fmt.Errorf("reset grants of %q: %w", name, err)
		}
		for _, g := range grants {
			if err := putGrant(ctx, tx, name, g); err != nil {
				return err
			}
		}
		if out, err = getUser(ctx, tx, name, false); err != nil {
			return err
		}
		if created {
			if err := writeAudit(ctx, tx, a, "user.create", userTarget(name), "", nil,
				federatedAudit{userAudit: userDoc(cur), Provider: f.Provider, Subject: f.Subject}); err != nil {
				return err
			}
		}
		before := grantsAudit{Admin: cur.Admin, Grants: nonNil(cur.Grants)}
		after := grantsAudit{Admin: out.Admin, Grants: nonNil(out.Grants), Skipped: skipped}
		if before.Admin == after.Admin && slices.Equal(before.Grants, after.Grants) && len(skipped) == 0 {
			return nil
		}
		return writeAudit(ctx, tx, a, "grant.sync", userTarget(name), "", before, after)
	})
	return out, err
}

// existingGrants splits gs into the grants on groups that exist and the
// names of those that do not.
func existingGrants(ctx context.Context, tx pgx.Tx, gs []Grant) (ok []Grant, skipped []string, err error) {
	if len(gs) == 0 {
		return nil, nil, nil
	}
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = g.Group
	}
	rows, _ := tx.Query(ctx, `SELECT name FROM job_groups WHERE name = ANY($1)`, names)
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, nil, fmt.Errorf("look up mapped groups: %w", err)
	}
	for _, g := range gs {
		if slices.Contains(found, g.Group) {
			ok = append(ok, g)
		} else {
			skipped = append(skipped, g.Group)
		}
	}
	return ok, skipped, nil
}

// Pending is a sign-in under way: an authorization request sent to a
// provider, or a device authorization a CLI polls.
type Pending struct {
	Provider    string
	Nonce       string
	Verifier    string
	RedirectURI string
	Next        string
	DeviceCode  string
	ExpiresAt   time.Time
}

// PutPending stores p under the SHA-256 of its state (or device handle).
// Expired ones of anyone are removed on the way.
func (s *Store) PutPending(ctx context.Context, hash []byte, p Pending) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM sso_pending WHERE expires_at < now()`); err != nil {
			return fmt.Errorf("delete expired sign-ins: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO sso_pending (id_sha256, provider, nonce, verifier, redirect_uri, next, device_code, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, hash, p.Provider, p.Nonce, p.Verifier, p.RedirectURI, p.Next, p.DeviceCode, p.ExpiresAt); err != nil {
			return fmt.Errorf("store sign-in under way: %w", err)
		}
		return nil
	})
}

const pendingColumns = `provider, nonce, verifier, redirect_uri, next, device_code, expires_at`

func scanPending(row pgx.Row) (Pending, error) {
	var p Pending
	err := row.Scan(&p.Provider, &p.Nonce, &p.Verifier, &p.RedirectURI, &p.Next, &p.DeviceCode, &p.ExpiresAt)
	return p, err
}

// TakePending removes and returns the live sign-in stored under hash:
// the one use it has. ErrNotFound when there is none (never stored,
// expired, or already taken: a replay).
func (s *Store) TakePending(ctx context.Context, hash []byte) (Pending, error) {
	p, err := scanPending(s.pool.QueryRow(ctx, `DELETE FROM sso_pending WHERE id_sha256 = $1 RETURNING `+pendingColumns, hash))
	if errors.Is(err, pgx.ErrNoRows) || err == nil && p.ExpiresAt.Before(time.Now()) {
		return Pending{}, fmt.Errorf("sign-in request: %w", ErrNotFound)
	}
	if err != nil {
		return Pending{}, fmt.Errorf("take sign-in request: %w", err)
	}
	return p, nil
}

// GetPending returns the live sign-in stored under hash without taking
// it (a device authorization polled again); ErrNotFound as TakePending.
func (s *Store) GetPending(ctx context.Context, hash []byte) (Pending, error) {
	p, err := scanPending(s.pool.QueryRow(ctx, `SELECT `+pendingColumns+` FROM sso_pending WHERE id_sha256 = $1 AND expires_at > now()`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return Pending{}, fmt.Errorf("sign-in request: %w", ErrNotFound)
	}
	if err != nil {
		return Pending{}, fmt.Errorf("get sign-in request: %w", err)
	}
	return p, nil
}

// AuditRefusedSignIn records a sign-in refused (sso.refused) with its
// reason: never a token or a password, only what went wrong.
func (s *Store) AuditRefusedSignIn(ctx context.Context, a Actor, provider, reason string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return writeAudit(ctx, tx, a, "sso.refused", "provider:"+provider, "", nil, map[string]string{"reason": reason})
	})
}
