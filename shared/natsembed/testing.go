package natsembed

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StartTest starts a server for a test, in the test's temporary directory,
// and connects to it; both end with the test. Tests that need options of
// their own (TLS, users, a fixed port) call Start.
func StartTest(t testing.TB) (*Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	srv, err := Start(Options{StoreDir: t.TempDir()})
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
