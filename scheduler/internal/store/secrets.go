package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/pgerr"
	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/secrets"
)

// Secret is a stored secret as anyone may see it: never its value, which
// only RunSecrets decrypts (docs/jobs.md, "Secrets").
type Secret struct {
	ID        int64
	Group     string
	Name      string
	Version   int
	KeyID     string
	CreatedBy string
	CreatedAt time.Time
	UpdatedBy string
	UpdatedAt time.Time
	// Jobs are the ids of the jobs that reference the secret.
	Jobs []int64
}

// MaxSecretBytes bounds a secret's value.
const MaxSecretBytes = 32 << 10

// WithSecrets gives the store the keyring secrets are encrypted with;
// without it (or with an empty one) writing or using a secret answers
// secrets.ErrNoKey.
func WithSecrets(kr secrets.Keyring) Option {
	return func(s *Store) { s.keyring = kr }
}

const secretColumns = `s.id, s.group_name, s.name, s.version, s.key_id, s.created_by, s.created_at, s.updated_by, s.updated_at,
	ARRAY(SELECT j.id FROM jobs j WHERE j.group_name = s.group_name AND s.name = ANY(j.secret_names) ORDER BY j.id)`

func scanSecret(row pgx.Row) (Secret, error) {
	var s Secret
	err := row.Scan(&s.ID, &s.Group, &s.Name, &s.Version, &s.KeyID, &s.CreatedBy, &s.CreatedAt, &s.UpdatedBy, &s.UpdatedAt, &s.Jobs)
	return s, err
}

// secretDoc is a secret as the audit log records it: never the value.
func secretDoc(s Secret) map[string]any {
	return map[string]any{"group": s.Group, "name": s.Name, "version": s.Version, "key_id": s.KeyID}
}

func secretTarget(id int64) string { return "secret:" + strconv.FormatInt(id, 10) }

func checkSecretValue(value []byte) error {
	if len(value) == 0 || len(value) > MaxSecretBytes {
		return fmt.Errorf("secret value: %d bytes, want 1 to %d: %w", len(value), MaxSecretBytes, ErrInvalid)
	}
	return nil
}

// CreateSecret stores value as group's secret name, encrypted under the
// keyring's primary key. A taken name is ErrConflict, an unknown group
// ErrNotFound.
func (s *Store) CreateSecret(ctx context.Context, a Actor, group, name string, value []byte) (Secret, error) {
	if err := checkSecretValue(value); err != nil {
		return Secret{}, err
	}
	sealed, err := s.keyring.Seal(group, name, value)
	if err != nil {
		return Secret{}, err
	}
	var out Secret
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out, err = scanSecret(tx.QueryRow(ctx, `WITH s AS (INSERT INTO secrets (group_name, name, key_id, nonce, ciphertext, created_by, updated_by)
			VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING *) SELECT `+secretColumns+` FROM s`,
			group, name, sealed.KeyID, sealed.Nonce, sealed.Ciphertext, a.Name))
		switch {
		case pgerr.ForeignKey(err):
			return fmt.Errorf("group %q: %w", group, ErrNotFound)
		case pgerr.Unique(err):
			return fmt.Errorf("secret %q in group %q: %w", name, group, ErrConflict)
		case err != nil:
			return err
		}
		return writeAudit(ctx, tx, a, "secret.create", secretTarget(out.ID), group, nil, secretDoc(out))
	})
	if err != nil {
		return Secret{}, fmt.Errorf("create secret: %w", err)
	}
	return out, nil
}

// GetSecret returns one secret (without its value).
func (s *Store) GetSecret(ctx context.Context, id int64) (Secret, error) {
	return rowOf(ctx, s.pool, "secret", `SELECT `+secretColumns+` FROM secrets s WHERE s.id = $1`, id, scanSecret)
}

// ListSecrets returns the secrets of group ("" for all) among groups (nil
// for every group), by group and name.
func (s *Store) ListSecrets(ctx context.Context, group string, groups []string) ([]Secret, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+secretColumns+` FROM secrets s
		WHERE ($1 = '' OR s.group_name = $1) AND ($2::text[] IS NULL OR s.group_name = ANY($2))
		ORDER BY s.group_name, s.name`, group, groups)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Secret, error) { return scanSecret(r) })
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	return out, nil
}

// SetSecretValue replaces a secret's value (rotation of the value): its
// version goes up; runs that start afterwards get the new value.
func (s *Store) SetSecretValue(ctx context.Context, a Actor, id int64, value []byte) (Secret, error) {
	if err := checkSecretValue(value); err != nil {
		return Secret{}, err
	}
	var out Secret
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := rowOf(ctx, tx, "secret", `SELECT `+secretColumns+` FROM secrets s WHERE s.id = $1 FOR UPDATE`, id, scanSecret)
		if err != nil {
			return err
		}
		sealed, err := s.keyring.Seal(cur.Group, cur.Name, value)
		if err != nil {
			return err
		}
		out, err = scanSecret(tx.QueryRow(ctx, `WITH s AS (UPDATE secrets SET key_id = $2, nonce = $3, ciphertext = $4,
			version = version + 1, updated_by = $5, updated_at = now() WHERE id = $1 RETURNING *)
			SELECT `+secretColumns+` FROM s`, id, sealed.KeyID, sealed.Nonce, sealed.Ciphertext, a.Name))
		if err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "secret.update", secretTarget(id), cur.Group, secretDoc(cur), secretDoc(out))
	})
	if err != nil {
		return Secret{}, fmt.Errorf("update secret %d: %w", id, err)
	}
	return out, nil
}

// DeleteSecret removes a secret no job references (one that is referenced
// is ErrInvalid, naming the jobs: their runs would fail).
func (s *Store) DeleteSecret(ctx context.Context, a Actor, id int64) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := rowOf(ctx, tx, "secret", `SELECT `+secretColumns+` FROM secrets s WHERE s.id = $1 FOR UPDATE`, id, scanSecret)
		if err != nil {
			return err
		}
		if len(cur.Jobs) > 0 {
			return fmt.Errorf("secret %s/%s is referenced by jobs %v: remove it from them first: %w", cur.Group, cur.Name, cur.Jobs, ErrInvalid)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM secrets WHERE id = $1`, id); err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "secret.delete", secretTarget(id), cur.Group, secretDoc(cur), nil)
	})
	if err != nil {
		return fmt.Errorf("delete secret %d: %w", id, err)
	}
	return nil
}

// checkSecrets decides a job write of group that references names where
// it referenced cur (refs.CheckSecrets), with the secrets group has now.
func checkSecrets(ctx context.Context, tx pgx.Tx, a Actor, group string, cur, names []string) error {
	if len(names) == 0 {
		return nil
	}
	rows, _ := tx.Query(ctx, `SELECT name FROM secrets WHERE group_name = $1 AND name = ANY($2)`, group, names)
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("check secrets: %w", err)
	}
	if err := refs.CheckSecrets(a.Refs, group, cur, names, func(n string) bool { return slices.Contains(have, n) }); err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	return nil
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// jobSecretEnv is the secret_env a row of j's kind keeps: a plain job's
// (see secretNames).
func jobSecretEnv(j *Job) map[string]string {
	if j.kind() != KindJob {
		return nil
	}
	return j.SecretEnv
}
