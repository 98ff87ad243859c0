package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/secrets"
	"github.com/jetjob/jetjob/shared/wire"
)

// ErrSecretsRefused is a request for a run's secrets that is not answered:
// the run is not of the asking group, has ended, or does not exist.
var ErrSecretsRefused = fmt.Errorf("%w: no run of this group with that id that has not ended", secrets.ErrRefused)

// RunSecrets answers a worker of group asking for the secrets of run id
// (scheduled at at) that it executes as worker: the job's secret_env as
// environment variables and the values of every name the job references
// (its secret_names, for params' placeholders), decrypted; for a run
// triggered with params of its own, no values (its placeholders are not
// resolved: only the job's own params were authorized). Only for a run
// of group that has not ended (SCHEDULED or TRIGGERED: the worker may ask
// before the schedulers recorded the publish or the start; RUNNING), and
// only the job's own references, which were authorized when written
// (refs.CheckSecrets). Each answer is audited as secret.use of the run,
// naming the secrets and their versions, never the values.
func (s *Store) RunSecrets(ctx context.Context, group string, id int64, at time.Time, worker string) (env, values map[string]string, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			jobID    int64
			envMap   map[string]string
			names    []string
			ownParam bool
		)
		err := tx.QueryRow(ctx, `SELECT j.id, j.secret_env, j.secret_names, r.params IS NULL FROM job_runs r JOIN jobs j ON j.id = r.job_id
			WHERE r.id = $1 AND r.scheduled_at = $2 AND r.group_name = $3 AND j.group_name = $3
			  AND r.status IN ('SCHEDULED', 'TRIGGERED', 'RUNNING')`, id, at, group).Scan(&jobID, &envMap, &names, &ownParam)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrSecretsRefused
		}
		if err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT name, version, key_id, nonce, ciphertext FROM secrets
			WHERE group_name = $1 AND name = ANY($2)`, group, names)
		values = make(map[string]string, len(names))
		versions := map[string]int{}
		var (
			name    string
			version int
			sealed  secrets.Sealed
		)
		_, err = pgx.ForEachRow(rows, []any{&name, &version, &sealed.KeyID, &sealed.Nonce, &sealed.Ciphertext}, func() error {
			v, err := s.keyring.Open(group, name, sealed)
			if err != nil {
				return err
			}
			values[name], versions[name] = string(v), version
			return nil
		})
		if err != nil {
			return err
		}
		for _, n := range names {
			if _, ok := values[n]; !ok {
				return fmt.Errorf("job %d references secret %q, which group %s no longer has", jobID, n, group)
			}
		}
		env = make(map[string]string, len(envMap))
		for k, n := range envMap {
			env[k] = values[n]
		}
		if !ownParam {
			// Params given with a trigger were not authorized as
			// references (an operator without scripts may trigger an
			// http job with other params): their placeholders stay.
			values = map[string]string{}
		}
		a := Actor{Name: "worker:" + worker, Auth: "nats:" + group}
		return writeAudit(ctx, tx, a, "secret.use", runTarget(id), group, nil,
			map[string]any{"run_id": id, "job_id": jobID, "worker": worker, "versions": versions})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("secrets of run %d: %w", id, err)
	}
	return env, values, nil
}

// RotateSecretsKey re-encrypts every secret not under the keyring's
// primary key with it (rotation of the key: afterwards the older keys can
// be dropped from the keyring), each row in its own transaction, audited
// as secret.rekey. It returns how many rows it re-encrypted.
func (s *Store) RotateSecretsKey(ctx context.Context, a Actor) (int, error) {
	if !s.keyring.Configured() {
		return 0, secrets.ErrNoKey
	}
	primary := s.keyring.Primary()
	rows, _ := s.pool.Query(ctx, `SELECT id FROM secrets WHERE key_id <> $1 ORDER BY id`, primary)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("rotate secrets key: %w", err)
	}
	n := 0
	for _, id := range ids {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var group, name string
			var old secrets.Sealed
			err := tx.QueryRow(ctx, `SELECT group_name, name, key_id, nonce, ciphertext FROM secrets WHERE id = $1 FOR UPDATE`, id).
				Scan(&group, &name, &old.KeyID, &old.Nonce, &old.Ciphertext)
			if errors.Is(err, pgx.ErrNoRows) || old.KeyID == primary {
				return nil // deleted or re-encrypted meanwhile
			}
			if err != nil {
				return err
			}
			value, err := s.keyring.Open(group, name, old)
			if err != nil {
				return err
			}
			sealed, err := s.keyring.Seal(group, name, value)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE secrets SET key_id = $2, nonce = $3, ciphertext = $4 WHERE id = $1`,
				id, sealed.KeyID, sealed.Nonce, sealed.Ciphertext); err != nil {
				return err
			}
			n++
			return writeAudit(ctx, tx, a, "secret.rekey", secretTarget(id), group,
				map[string]any{"key_id": old.KeyID}, map[string]any{"key_id": sealed.KeyID})
		})
		if err != nil {
			return n, fmt.Errorf("rotate secrets key: secret %d: %w", id, err)
		}
	}
	return n, nil
}

// secretNames is every secret a job references: its secret_env's values
// and its params' ${secret:NAME} placeholders, each once. Only a plain
// job references secrets: CreateJob and UpdateJob authorize its
// references (checkSecrets); a workflow's row and its inline nodes' jobs
// are written by other paths that do not, so they reference none (a
// placeholder in their params stays as it is).
func secretNames(j *Job) []string {
	if j.kind() != KindJob {
		return nil
	}
	names := wire.SecretPlaceholders(j.Params)
	for _, n := range j.SecretEnv {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}
