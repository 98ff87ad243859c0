package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Password links: a one-time link to the console page where a user
// chooses a password (a user imported without one, or an admin's reset).
// Only the SHA-256 of the token is stored (auth.HashSecret), a link works
// once and until it expires, and a new link for a user makes the older
// ones of theirs void.

// DefaultPasswordLinkTTL is how long a link works unless asked otherwise.
const DefaultPasswordLinkTTL = 72 * time.Hour

// ErrLinkInvalid refuses a link that is unknown, used, expired, void, or
// of a disabled user: one message for all, so that a token cannot be
// probed.
var ErrLinkInvalid = errors.New("this set-password link is invalid, already used or expired: ask an administrator for a new one")

// PasswordLink is a stored link, without its token.
type PasswordLink struct {
	User      string
	ExpiresAt time.Time
}

// CreatePasswordLink stores the hash of a new link's token for user,
// expiring after ttl, and voids the user's earlier unused links; recorded
// as user.password_link by a.
func (s *Store) CreatePasswordLink(ctx context.Context, a Actor, user string, tokenHash []byte, ttl time.Duration) (PasswordLink, error) {
	var out PasswordLink
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := getUser(ctx, tx, user, true); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE password_links SET used_at = now() WHERE user_name = $1 AND used_at IS NULL`, user); err != nil {
			return fmt.Errorf("void older links of user %q: %w", user, err)
		}
		if err := tx.QueryRow(ctx, `INSERT INTO password_links (token_hash, user_name, created_by, expires_at)
			VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond') RETURNING user_name, expires_at`,
			tokenHash, user, a.Name, ttl.Milliseconds()).Scan(&out.User, &out.ExpiresAt); err != nil {
			return fmt.Errorf("store a set-password link of user %q: %w", user, err)
		}
		return writeAudit(ctx, tx, a, "user.password_link", userTarget(user), "", nil, map[string]any{"expires_at": out.ExpiresAt})
	})
	return out, err
}

// UsePasswordLink sets the password of the link whose token hashes to
// tokenHash to passwordHash and spends the link, in one transaction (two
// uses at once: one wins, the other is ErrLinkInvalid). The user's
// sessions end, as with any password change. It returns the user's name.
func (s *Store) UsePasswordLink(ctx context.Context, a Actor, tokenHash []byte, passwordHash string) (string, error) {
	var user string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE password_links l SET used_at = now()
			FROM users u
			WHERE l.token_hash = $1 AND l.used_at IS NULL AND l.expires_at > now() AND u.name = l.user_name AND NOT u.disabled
			RETURNING l.user_name`, tokenHash).Scan(&user)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrLinkInvalid
		}
		if err != nil {
			return fmt.Errorf("spend a set-password link: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE users SET password_hash = $2 WHERE name = $1`, user, passwordHash); err != nil {
			return fmt.Errorf("set the password of user %q: %w", user, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE user_name = $1`, user); err != nil {
			return fmt.Errorf("end sessions of user %q: %w", user, err)
		}
		a.Name = user // the link's holder acts as the user it names
		return writeAudit(ctx, tx, a, "user.password_set", userTarget(user), "", nil, map[string]string{"password": "set with a one-time link"})
	})
	return user, err
}
