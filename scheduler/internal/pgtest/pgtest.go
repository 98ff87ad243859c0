// Package pgtest gives integration tests a real PostgreSQL: one throwaway
// server per test binary (started by Main from TestMain), a migrated
// template database, and a fresh database per test copied from it, so that
// tests run in parallel without seeing each other's rows.
//
// In the short tier (go test -short) Main starts no server and URL and
// Pool skip the test (package testtier); where the machine has no
// PostgreSQL server binaries they skip it too, naming make
// ensure-postgres, unless make runs the tests (then that fails them).
package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jetjob/jetjob/internal/localpg"
	"github.com/jetjob/jetjob/internal/testtier"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

const template = "jetjob_template"

var (
	server *localpg.Server
	seq    atomic.Int64
	// noBinaries is why Main started no server: the machine has no
	// PostgreSQL server binaries (URL skips or fails with it).
	noBinaries error
)

// Main starts the package's PostgreSQL, migrates the template, runs the
// tests and stops the server. Use it as TestMain's body.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testtier.Short() {
		return m.Run()
	}
	if _, err := localpg.FindBinaries(); err != nil && !testtier.Required() {
		noBinaries = err
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	server, err = localpg.Start(ctx, localpg.Options{Fast: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	defer server.Close()
	if err := server.CreateDatabase(ctx, template, ""); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	pool, err := pgxpool.New(ctx, server.URL(template))
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	_, err = store.Migrate(ctx, pool)
	pool.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	return m.Run()
}

// Server is the package's PostgreSQL server, for t (tests may Stop and
// Start it). It skips t where there is none (see the package doc).
func Server(t testing.TB) *localpg.Server {
	t.Helper()
	testtier.Needs(t, testtier.PostgreSQL)
	if noBinaries != nil {
		testtier.Missing(t, "PostgreSQL server binaries", noBinaries, "make ensure-postgres (or make test)")
	}
	if server == nil {
		t.Fatal("pgtest: call pgtest.Main from TestMain")
	}
	return server
}

// URL creates a fresh migrated database for t and returns its URL.
func URL(t testing.TB) string {
	t.Helper()
	srv := Server(t)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.CreateDatabase(ctx, name, template); err != nil {
		t.Fatal(err)
	}
	return srv.URL(name)
}

// Pool creates a fresh migrated database for t and returns a pool on it,
// closed when the test ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
