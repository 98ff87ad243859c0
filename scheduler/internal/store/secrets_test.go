package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/secrets"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// Rotating the key: with a new primary before the old key, rotate-key
// re-encrypts every secret under the new one, and a scheduler that holds
// only the new key then gives a running run the same values. Before the
// rotation, that scheduler could not open them.
func TestRotateSecretsKeyReencryptsAndValuesStillResolve(t *testing.T) {
	ctx := context.Background()
	oldKey, newKey := secrets.GenerateKey(), secrets.GenerateKey()
	keyring := func(spec string) secrets.Keyring {
		kr, err := secrets.ParseKeyring(spec)
		if err != nil {
			t.Fatal(err)
		}
		return kr
	}
	pool, st := pgtest.Store(t)
	before, err := store.Open(ctx, pool, 0, store.WithSecrets(keyring("old:"+oldKey)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := before.CreateSecret(ctx, store.System, pgtest.Group, "token", []byte("v-1")); err != nil {
		t.Fatal(err)
	}
	j, err := st.CreateJob(ctx, store.System, store.Job{Group: pgtest.Group, Name: "uses-token", Handler: "h",
		ScheduleType: "none", Timezone: "UTC", MisfirePolicy: "skip", RouteStrategy: "any", BlockStrategy: "serial",
		SecretEnv: map[string]string{"TOKEN": "token"}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	var run int64
	if err := pool.QueryRow(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at)
		VALUES ($1, $2, 0, 'manual', 'RUNNING', $3) RETURNING id`, j.ID, pgtest.Group, at).Scan(&run); err != nil {
		t.Fatal(err)
	}

	after, err := store.Open(ctx, pool, 0, store.WithSecrets(keyring("new:"+newKey)))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := after.RunSecrets(ctx, pgtest.Group, run, at, "w1"); err == nil {
		t.Fatal("a keyring without the secret's key opened it")
	}
	both, err := store.Open(ctx, pool, 0, store.WithSecrets(keyring("new:"+newKey+",old:"+oldKey)))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := both.RotateSecretsKey(ctx, store.System); err != nil || n != 1 {
		t.Fatalf("rotate: %d re-encrypted, %v; want 1", n, err)
	}
	env, values, err := after.RunSecrets(ctx, pgtest.Group, run, at, "w1")
	if err != nil || env["TOKEN"] != "v-1" || values["token"] != "v-1" {
		t.Fatalf("after rotation, with the new key only: env %v values %v, %v; want TOKEN=v-1", env, values, err)
	}
	if n, err := both.RotateSecretsKey(ctx, store.System); err != nil || n != 0 {
		t.Errorf("a second rotation re-encrypted %d, %v; want none", n, err)
	}

	// A run that ended, or of another group, gets nothing.
	if _, err := pool.Exec(ctx, `UPDATE job_runs SET status = 'SUCCEEDED' WHERE id = $1`, run); err != nil {
		t.Fatal(err)
	}
	if _, _, err := after.RunSecrets(ctx, pgtest.Group, run, at, "w1"); !errors.Is(err, secrets.ErrRefused) {
		t.Errorf("secrets of an ended run: %v, want refused", err)
	}
	if _, _, err := after.RunSecrets(ctx, "other", run, at, "w1"); !errors.Is(err, secrets.ErrRefused) {
		t.Errorf("secrets of another group's run: %v, want refused", err)
	}
}
