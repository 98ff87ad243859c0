// Package testnats starts the embedded NATS server with jetjob's streams
// and buckets that the worker's internal packages test against: no mocks
// of the broker. It is for tests only: no non-test file imports it.
package testnats

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/jstest"
)

// WaitLimit bounds the waits of the tests: generous for slow CI machines,
// yet a hang becomes a failure.
const WaitLimit = 30 * time.Second

// Env is one server, provisioned, with a connection of its own.
type Env struct {
	t   *testing.T
	URL string
	NC  *nats.Conn
	JS  jetstream.JetStream
}

// New starts a server for t, stopped when t ends, and provisions jetjob's
// streams and buckets with the default settings. It skips t in the short
// tier.
func New(t *testing.T) *Env {
	t.Helper()
	srv, nc, js := jstest.Streams(t)
	return &Env{t: t, URL: srv.ClientURL(), NC: nc, JS: js}
}

// Connect opens another connection, closed when the test ends.
func (e *Env) Connect() *nats.Conn {
	e.t.Helper()
	nc, err := nats.Connect(e.URL)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(nc.Close)
	return nc
}

// Ctx is a context bounded by WaitLimit.
func (e *Env) Ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), WaitLimit)
	e.t.Cleanup(cancel)
	return ctx
}
