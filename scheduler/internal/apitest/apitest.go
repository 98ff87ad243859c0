// Package apitest is what the tests of jetjob's API and of what stands on
// it (the console, the CLI) need to serve a real API: a store over a fresh
// PostgreSQL database, NATS with jetjob's streams, an api.Config whose
// scheduler hooks do nothing, and jobs written straight to the store. It
// is for tests only: no non-test file imports it. The package under test
// must run pgtest.Main in its TestMain.
package apitest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/jstest"
	"github.com/jetjob/jetjob/internal/runlog"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/api"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/secrets"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// Store opens a store over a fresh, migrated database, and returns its
// pool too (for tests that write rows the API has no call for).
func Store(t testing.TB) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.Pool(t)
	st, err := store.Open(context.Background(), pool, 0, store.WithSecrets(Keyring))
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	return st, pool
}

// Keyring is the tests' secrets keyring: a fresh key per test binary.
var Keyring, _ = secrets.ParseKeyring("test:" + secrets.GenerateKey())

// JetStream starts an embedded NATS server with jetjob's streams, for the
// run logs the API reads; it stops with the test.
func JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	_, _, js := jstest.Streams(t)
	return js
}

// Locks reads JETJOB_LOCKS of js, as a scheduler's API does (Config.Locks).
func Locks(js jetstream.JetStream) func(ctx context.Context, key string) ([]byte, error) {
	return func(ctx context.Context, key string) ([]byte, error) {
		return stream.ReadFlowKey(ctx, js, stream.Config{}, key)
	}
}

// Config is an API configuration without a scheduler behind it: a run is
// fired and killed into nothing, no worker is live, no run has a log.
// Tests set what they look at.
func Config() api.Config {
	return api.Config{
		Fire:    func(runs.Planned) {},
		Logs:    runlog.New(nil),
		Workers: func(string) []wire.WorkerInfo { return nil },
		Kill:    func(context.Context, int64, string) error { return nil },
	}
}

// Workers is a worker registry that reports what live returns: every
// worker, or those of the group asked for.
func Workers(live func() []wire.WorkerInfo) func(group string) []wire.WorkerInfo {
	return func(group string) []wire.WorkerInfo {
		var out []wire.WorkerInfo
		for _, w := range live() {
			if group == "" || w.Group == group {
				out = append(out, w)
			}
		}
		return out
	}
}

// Job creates an enabled job named name in group with handler, without a
// schedule and with the default strategies.
func Job(t testing.TB, st *store.Store, group, name, handler string) store.Job {
	t.Helper()
	j, err := st.CreateJob(context.Background(), store.System, store.Job{Group: group, Name: name,
		Handler: handler, ScheduleType: "none", Timezone: "UTC", MisfirePolicy: "skip", RouteStrategy: "any",
		BlockStrategy: "serial", Enabled: true})
	if err != nil {
		t.Fatalf("create job %s/%s: %v", group, name, err)
	}
	return j
}
