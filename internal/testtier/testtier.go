// Package testtier sorts jetjob's tests into two tiers and decides, in one
// place, what a test does when what it needs is not there.
//
// The short tier (`go test -short ./...`, `make test-short`) runs only the
// tests that need no server: no PostgreSQL, no NATS (the embedded one
// counts: it is a real server with a store on disk), no Chromium, no
// MariaDB, no Docker. The full tier (`make test`) runs everything. A test
// does not ask for the tier itself: the one helper through which it obtains
// a server (pgtest, natsembed's test helpers, jstest, testnats, localmaria,
// the browser helper, the e2e cluster) calls Needs, and a TestMain that
// starts a server asks Short first and starts nothing in the short tier.
//
// A prerequisite the machine lacks (the e2e images, helm, promtool, server
// binaries) is Missing: the test skips, naming the make target that
// provides it, so that a newcomer's first `go test ./...` passes or skips.
// Under make (which sets JETJOB_TEST_REQUIRED=1) the same absence fails the
// test: a make target that was asked to run a suite must not report
// success for a suite it skipped.
//
// Test helpers call it; no production code path does.
package testtier

import (
	"flag"
	"os"
	"testing"
)

// What a test may need, as Needs and the skip messages name it.
const (
	PostgreSQL = "PostgreSQL"
	NATS       = "a NATS server"
	Chromium   = "Chromium"
	MariaDB    = "MariaDB"
	Slapd      = "OpenLDAP (slapd)"
	Docker     = "Docker"
)

// RequiredEnv is the environment variable that turns Missing's skip into a
// failure. The Makefile's test targets set it to 1.
const RequiredEnv = "JETJOB_TEST_REQUIRED"

// Short reports whether this run is the short tier (go test -short). It is
// safe in TestMain, before m.Run: it parses the test flags first, as m.Run
// would (m.Run does not parse them again).
func Short() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	return testing.Short()
}

// Needs skips t in the short tier: t needs what (PostgreSQL, NATS, ...).
// Call it from the helper that obtains the server, before starting it.
func Needs(t testing.TB, what string) {
	t.Helper()
	if Short() {
		t.Skipf("needs %s: runs in the full tier (make test), not under -short", what)
	}
}

// Required reports whether a missing prerequisite must fail the run rather
// than skip it (RequiredEnv is set, as make sets it).
func Required() bool {
	v := os.Getenv(RequiredEnv)
	return v != "" && v != "0" && v != "false"
}

// Missing handles a prerequisite the machine lacks: what is missing, err
// says why (nil when there is nothing to add), target is the make target
// that provides it and runs the test. It skips t, or fails it when
// Required. It does not return.
func Missing(t testing.TB, what string, err error, target string) {
	t.Helper()
	msg := "needs " + what + ": run " + target
	if err != nil {
		msg += " (" + err.Error() + ")"
	}
	if Required() {
		t.Fatal(msg)
	} else {
		t.Skip(msg)
	}
}
