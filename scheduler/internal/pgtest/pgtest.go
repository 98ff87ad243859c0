// Package pgtest gives integration tests a real PostgreSQL: one throwaway
// server per test binary (started by Main from TestMain), a migrated
// template database, and a fresh database per test copied from it, so that
// tests run in parallel without seeing each other's rows. A test that
// stops and starts PostgreSQL takes a server of its own (OwnServer).
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
	if err := createMigrated(ctx, server, template); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	return m.Run()
}

// createMigrated creates database name on srv and migrates it.
func createMigrated(ctx context.Context, srv *localpg.Server, name string) error {
	if err := srv.CreateDatabase(ctx, name, ""); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, srv.URL(name))
	if err != nil {
		return fmt.Errorf("pgtest: connect to %s: %w", name, err)
	}
	defer pool.Close()
	if _, err := store.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("pgtest: migrate %s: %w", name, err)
	}
	return nil
}

// Server is the package's PostgreSQL server, shared by every test of the
// package, each on its own database (URL, Pool). It skips t where there
// is none (see the package doc). A test that stops or restarts PostgreSQL
// takes OwnServer instead: stopping this one would cut off every test
// running beside it.
func Server(t testing.TB) *localpg.Server {
	t.Helper()
	needServer(t)
	if server == nil {
		t.Fatal("pgtest: call pgtest.Main from TestMain")
	}
	return server
}

// needServer skips t in the short tier and where the machine has no
// PostgreSQL server binaries (failing it instead under make).
func needServer(t testing.TB) {
	t.Helper()
	testtier.Needs(t, testtier.PostgreSQL)
	if noBinaries != nil {
		testtier.Missing(t, "PostgreSQL server binaries", noBinaries, "make ensure-postgres (or make test)")
	}
}

// ownDatabase is the migrated database OwnServer makes on its server.
const ownDatabase = "jetjob"

// OwnServer starts a PostgreSQL server for t alone, closed when t ends, and
// returns it with the URL of a migrated database on it. It is for tests
// that Stop and Start PostgreSQL (outages), so that they can run in
// parallel with the tests on the shared server. Starting a server costs
// an initdb (a second or two), so the other tests share Server.
func OwnServer(t testing.TB) (*localpg.Server, string) {
	t.Helper()
	needServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := localpg.Start(ctx, localpg.Options{Fast: true})
	if err != nil {
		t.Fatalf("pgtest: own server: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("pgtest: own server: %v", err)
		}
	})
	if err := createMigrated(ctx, srv, ownDatabase); err != nil {
		t.Fatal(err)
	}
	return srv, srv.URL(ownDatabase)
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
