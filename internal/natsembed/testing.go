package natsembed

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/testtier"
)

// StartTest starts a server for a test, in the test's temporary directory,
// and connects to it; both end with the test. Tests that need options of
// their own call StartTestWith, or Start (TLS, users, a fixed port) to
// connect their own way. Each skips t in the short tier (go test -short).
func StartTest(t testing.TB) (*Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	return StartTestWith(t, Options{})
}

// StartTestWith is StartTest with options of the test's own (a config
// file, say); StoreDir defaults to a directory of the test's.
func StartTestWith(t testing.TB, o Options) (*Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	testtier.Needs(t, testtier.NATS)
	if o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	srv, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return srv, nc, js
}
