// Package runevents publishes a worker's run events (started, finished) on
// JETJOB_EVENTS and tells each run when its event is stored. A run waits
// for that: a started event is the run's start claim and must be stored
// before its handler runs, a finished one before its trigger is acked
// (docs/protocol.md, "The worker's side").
//
// Events are published in batches (package groupcommit): a busy worker
// sends one message for many runs instead of two per run, an idle one sends
// each event at once. A batch carries its own Nats-Msg-Id,
// events-<group>-<worker>-<start, Unix ns>-<n>, so a retried publish is
// stored once. Events are not de-duplicated one by one: the scheduler
// applies them idempotently and monotonically, so a second finished event
// of a run (a redelivered trigger executed again) changes nothing. Nor does
// their order matter: the scheduler applies them by status rank.
package runevents

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/runtrace"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testsignal"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/groupcommit"
)

const (
	maxBatch     = 256
	maxBytes     = 512 << 10 // well under NATS's default 1 MiB payload
	maxPublishes = 4
	// attemptTimeout bounds one publish attempt of a batch: JetStream
	// answers in milliseconds, and an attempt lost in a leader change is
	// better retried soon (same message id: stored once).
	attemptTimeout = 2 * time.Second
)

// ErrStopped is the error of an event handed over after the Publisher
// stopped, or still queued when it did.
var ErrStopped = errors.New("event publisher stopped")

// Publisher publishes the run events of one worker.
type Publisher struct {
	js     jetstream.JetStream
	group  string
	prefix string // of the batches' message ids
	n      atomic.Uint64
	log    *zap.Logger
	batch  *groupcommit.Batcher[*pending]

	// Signals, set before Run (tests: initialised), are the publisher's
	// key moments.
	Signals TestSignals
}

// TestSignals are the publisher's key moments (package
// internal/testsignal); inert unless a test calls Init.
type TestSignals struct {
	// Flushed: a batch of events is stored in JetStream (its events,
	// before the runs waiting for them are told).
	Flushed testsignal.Signal[[]wire.Event]
}

// Init initialises every signal for tb's test.
func (ts *TestSignals) Init(tb testsignal.TB) { ts.Flushed.Init(tb) }

type pending struct {
	ev          wire.Event
	res         chan error // buffered: a send never blocks on its reader
	traceparent string     // the run's span; "" with tracing off
}

// New returns the Publisher of worker workerID of group; its Run must be
// started, and outlive every run.
func New(js jetstream.JetStream, group, workerID string, log *zap.Logger) *Publisher {
	p := &Publisher{
		js: js, group: group, log: log,
		prefix: fmt.Sprintf("events-%s-%s-%d", group, workerID, time.Now().UnixNano()),
	}
	p.batch = groupcommit.New(maxBatch, maxPublishes, p.send, func(e *pending) { e.res <- ErrStopped })
	p.batch.LimitBytes(maxBytes, func(e *pending) int { return len(e.ev.Message) + len(e.ev.Output) + len(e.ev.Map) + 256 })
	return p
}

// Run publishes until ctx ends, which also bounds every publish's retries;
// events queued then fail with ErrStopped. It returns once every publish
// under way has returned.
func (p *Publisher) Run(ctx context.Context) { p.batch.Run(ctx) }

// Done is closed once Run has returned.
func (p *Publisher) Done() <-chan struct{} { return p.batch.Done() }

// Publish hands ev to the publisher and waits until the batch holding it
// is acknowledged by JetStream, or its publishing was given up.
// traceparent is the run's trace context for the message header, "" for
// none.
func (p *Publisher) Publish(ev wire.Event, traceparent string) error {
	e := &pending{ev: ev, res: make(chan error, 1), traceparent: traceparent}
	if err, ok := groupcommit.Await(p.batch, e, e.res); ok {
		return err
	}
	return fmt.Errorf("publish %s event: %w", ev.Kind, ErrStopped)
}

// send publishes one batch and tells each of its events the result.
func (p *Publisher) send(ctx context.Context, batch []*pending) {
	err := p.publish(ctx, batch, fmt.Sprintf("%s-%d", p.prefix, p.n.Add(1)))
	if err == nil && p.Signals.Flushed.On() {
		evs := make([]wire.Event, len(batch))
		for i, e := range batch {
			evs[i] = e.ev
		}
		p.Signals.Flushed.Signal(evs)
	}
	for _, e := range batch {
		e.res <- err
	}
}

// publish sends one batch as message id, retrying with backoff until
// JetStream acknowledges it or ctx ends.
func (p *Publisher) publish(ctx context.Context, batch []*pending, id string) error {
	evs := make([]wire.Event, len(batch))
	for i, e := range batch {
		evs[i] = e.ev
	}
	data, err := wire.EncodeEvents(evs...)
	if err != nil {
		// A bug here, not a transient failure: retrying cannot help.
		return fmt.Errorf("encode %d run events: %w", len(batch), err)
	}
	header := header(batch)
	err = backoff.Retry(ctx, backoff.Policy{
		Backoff: backoff.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2},
		OnRetry: func(attempt int, _ time.Duration, err error) {
			p.log.Warn("publishing run events failed; retrying",
				zap.Int("events", len(batch)), zap.Int("attempt", attempt), zap.Error(err))
		},
	}, func(ctx context.Context) error {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		defer cancel()
		_, err := p.js.PublishMsg(actx, &nats.Msg{Subject: stream.Event(p.group), Data: data, Header: header}, jetstream.WithMsgID(id))
		return err
	})
	if err != nil { // ctx ended
		return fmt.Errorf("publish %d run events: %w", len(batch), err)
	}
	return nil
}

// header is the header of an events message: one traceparent per run of
// the batch that has one, none at all with tracing off.
func header(batch []*pending) nats.Header {
	var h nats.Header
	for i, e := range batch {
		if e.traceparent == "" {
			continue
		}
		dup := false
		for _, q := range batch[:i] {
			if q.traceparent == e.traceparent {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		if h == nil {
			h = nats.Header{}
		}
		h[runtrace.HeaderTraceparent] = append(h[runtrace.HeaderTraceparent], e.traceparent)
	}
	return h
}
