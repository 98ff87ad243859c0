// Package jstest is the scheduler's side of JetStream for the tests of
// the worker's side (the built-in handlers, the jetjob-worker binary): an
// embedded NATS server with jetjob's streams, where a test publishes
// triggers as a scheduler would (signed with Signer) and reads back the
// events and log lines a worker publishes; Streams is that server alone,
// for a test of one component (and package testnats). It is for tests
// only: no non-test file imports it but another test package's.
package jstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testtier"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/shared/wire"
)

// WaitLimit bounds every wait: generous for a loaded machine, yet a hang
// becomes a failure.
const WaitLimit = 30 * time.Second

// Signer is the tests' scheduler trigger signing key: Publish signs with
// it, and the workers under test accept Keys (PublicKey, for a binary's
// JETJOB_TRIGGER_PUBLIC_KEYS).
var Signer, Keys = func() (*trigsign.Signer, *trigsign.Verifier) {
	s, v, err := trigsign.GeneratePair()
	if err != nil {
		panic(err)
	}
	return s, v
}()

// PublicKey is Signer's public key as JETJOB_TRIGGER_PUBLIC_KEYS takes it.
func PublicKey() string { return trigsign.EncodePublicKey(Signer.PublicKey()) }

// Env is a running embedded server and the test's client of it.
type Env struct {
	T   testing.TB
	Srv *natsembed.Server
	JS  jetstream.JetStream

	events jetstream.Consumer
	seen   []wire.Event
}

// Start starts an embedded server with so, connects the test's client
// with co (for a server that wants TLS or credentials), provisions
// jetjob's streams and a consumer of every event. All of it ends with the
// test. It skips t in the short tier.
func Start(t testing.TB, so natsembed.Options, co ...nats.Option) *Env {
	t.Helper()
	testtier.Needs(t, testtier.NATS)
	srv, err := natsembed.Start(so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	e := &Env{T: t, Srv: srv}
	if e.JS, err = jetstream.New(e.Connect(co...)); err != nil {
		t.Fatal(err)
	}
	if err := stream.Provision(Ctx(t), e.JS, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	e.events, err = e.JS.CreateOrUpdateConsumer(Ctx(t), stream.Events, jetstream.ConsumerConfig{
		Durable: "test-events", FilterSubject: "jetjob.event.>", AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Streams starts an embedded server for t (natsembed.StartTest) with
// jetjob's streams and buckets provisioned at their default settings: what
// a test of one component that reads or writes them starts from. It skips
// t in the short tier.
func Streams(t testing.TB) (*natsembed.Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	srv, nc, js := natsembed.StartTest(t)
	if err := stream.Provision(Ctx(t), js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	return srv, nc, js
}

// Ctx is a context that ends after WaitLimit, or with the test.
func Ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), WaitLimit)
	t.Cleanup(cancel)
	return c
}

// URL is the server's client URL.
func (e *Env) URL() string { return e.Srv.ClientURL() }

// Connect opens another connection to the server (a worker's), closed
// when the test ends.
func (e *Env) Connect(opts ...nats.Option) *nats.Conn {
	e.T.Helper()
	nc, err := nats.Connect(e.URL(), opts...)
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(nc.Close)
	return nc
}

// Publish publishes tr on its group's shared subject with the scheduler's
// message id, signed by Signer, as dispatch does.
func (e *Env) Publish(tr *wire.Trigger) {
	e.T.Helper()
	data, err := wire.EncodeTrigger(tr)
	if err != nil {
		e.T.Fatal(err)
	}
	m := nats.NewMsg(stream.TriggerAny(tr.Group))
	m.Data = data
	Signer.Sign(m.Header, tr.Group, false, data)
	if _, err := e.JS.PublishMsg(Ctx(e.T), m, jetstream.WithMsgID(wire.MsgID(tr.RunID))); err != nil {
		e.T.Fatal(err)
	}
}

// Event reads the workers' events until run runID has one of kind, and
// returns it; it fails the test after WaitLimit.
func (e *Env) Event(runID int64, kind wire.EventKind) wire.Event {
	e.T.Helper()
	deadline := time.Now().Add(WaitLimit)
	for {
		for _, ev := range e.seen {
			if ev.RunID == runID && ev.Kind == kind {
				return ev
			}
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("no %s event of run %d within %s; events %+v", kind, runID, WaitLimit, e.seen)
		}
		m, err := e.events.Next(jetstream.FetchMaxWait(200 * time.Millisecond))
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) {
			continue
		}
		if err != nil {
			e.T.Fatal(err)
		}
		evs, err := wire.DecodeEvents(m.Data())
		if err != nil {
			e.T.Fatalf("invalid events message: %v", err)
		}
		_ = m.Ack()
		e.seen = append(e.seen, evs...)
	}
}

// LogLines returns every line of a run's log stored so far. A worker
// publishes a run's finished event after its lines are stored, so after
// Event(run, finished) the log is whole.
func (e *Env) LogLines(group string, runID int64) []wire.LogLine {
	e.T.Helper()
	subject := stream.Log(group, runID)
	s, err := e.JS.Stream(Ctx(e.T), stream.Logs)
	if err != nil {
		e.T.Fatal(err)
	}
	info, err := s.Info(Ctx(e.T), jetstream.WithSubjectFilter(subject))
	if err != nil {
		e.T.Fatal(err)
	}
	n := info.State.Subjects[subject]
	if n == 0 {
		return nil
	}
	cons, err := e.JS.OrderedConsumer(Ctx(e.T), stream.Logs, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		e.T.Fatal(err)
	}
	out := make([]wire.LogLine, 0, n)
	for range n {
		m, err := cons.Next(jetstream.FetchMaxWait(WaitLimit))
		if err != nil {
			e.T.Fatal(err)
		}
		l, err := wire.DecodeLogLine(m.Data())
		if err != nil {
			e.T.Fatal(err)
		}
		out = append(out, *l)
	}
	return out
}
