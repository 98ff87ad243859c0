package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// Run events are published in batches (groupCommit): a busy worker sends
// one message for many runs instead of two per run, an idle one sends each
// event at once. Each run waits for the acknowledgement of the batch
// holding its event: a started event before its handler runs, a finished
// one before its trigger is acked.
//
// A batch carries its own Nats-Msg-Id, so a retried publish is stored once.
// Events are not de-duplicated one by one: the scheduler applies them
// idempotently and monotonically, so a second finished event of a run (a
// redelivered trigger executed again) changes nothing. Nor does their
// order matter: the scheduler applies them by status rank.
const (
	maxEventBatch     = 256
	maxEventBytes     = 512 << 10 // well under NATS's default 1 MiB payload
	maxEventPublishes = 4
	// eventAttemptTimeout bounds one publish attempt of a batch: JetStream
	// answers in milliseconds, and an attempt lost in a leader change is
	// better retried soon (same message id: stored once).
	eventAttemptTimeout = 2 * time.Second
)

// publishAttemptTimeout bounds one ack attempt.
const publishAttemptTimeout = 5 * time.Second

// ackAttempts bounds ack retries: a double ack whose reply was lost is not
// answered again by the server (the message is no longer pending), so
// retrying forever would never end. A trigger whose ack really got lost is
// redelivered and recognised as finished here (see claim).
const ackAttempts = 3

var errEventsStopped = errors.New("event publisher stopped")

type pendingEvent struct {
	ev          wire.Event
	res         chan error // buffered: a send never blocks on its reader
	traceparent string     // the run's span (trace.go); "" with tracing off
}

// newEventBatcher returns the group commit of w's run events; its run
// must be started (and outlive every run).
func (w *Worker) newEventBatcher() *groupCommit[*pendingEvent] {
	prefix := fmt.Sprintf("events-%s-%s-%d", w.cfg.Group, w.cfg.ID, time.Now().UnixNano())
	var n atomic.Uint64
	g := newGroupCommit(maxEventBatch, maxEventPublishes, func(batch []*pendingEvent) {
		err := w.publishEvents(batch, fmt.Sprintf("%s-%d", prefix, n.Add(1)))
		for _, p := range batch {
			p.res <- err
		}
	}, func(p *pendingEvent) { p.res <- errEventsStopped })
	g.maxBytes, g.size = maxEventBytes, func(p *pendingEvent) int { return len(p.ev.Message) + 256 }
	return g
}

// publishEvents sends one batch as message id, retrying with backoff until
// JetStream acknowledges it or pubCtx ends.
func (w *Worker) publishEvents(batch []*pendingEvent, id string) error {
	evs := make([]wire.Event, len(batch))
	for i, p := range batch {
		evs[i] = p.ev
	}
	data, err := wire.EncodeEvents(evs...)
	if err != nil {
		return err // a bug here, not a transient failure: retrying cannot help
	}
	ctx := w.pubCtx
	header := eventHeader(batch)
	var bo backoff
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, eventAttemptTimeout)
		_, err := w.js.PublishMsg(actx, &nats.Msg{Subject: stream.Event(w.cfg.Group), Data: data, Header: header}, jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			return nil
		}
		w.log.Warn("publishing run events failed; retrying",
			zap.Int("events", len(batch)), zap.Int("attempt", attempt), zap.Error(err))
		if !sleepCtx(ctx, bo.next()) {
			return fmt.Errorf("publish %d run events: %w (last error: %v)", len(batch), ctx.Err(), err)
		}
	}
}

// publishEvent hands ev to the batcher and waits until the batch holding
// it is acknowledged by JetStream, or its publishing was given up.
// traceparent is the run's trace context for the message header, "" for
// none.
func (w *Worker) publishEvent(ev wire.Event, traceparent string) error {
	defer w.metrics.eventQueued()()
	p := &pendingEvent{ev: ev, res: make(chan error, 1), traceparent: traceparent}
	if err, ok := await(w.events, p, p.res); ok {
		return err
	}
	return fmt.Errorf("publish %s event: %w", ev.Kind, errEventsStopped)
}

// ackMsg acknowledges msg and waits for the server to confirm it.
func (w *Worker) ackMsg(ctx context.Context, msg jetstream.Msg) error {
	var bo backoff
	var err error
	for range ackAttempts {
		actx, cancel := context.WithTimeout(ctx, publishAttemptTimeout)
		err = msg.DoubleAck(actx)
		cancel()
		if err == nil || errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			return nil
		}
		if !sleepCtx(ctx, bo.next()) {
			break
		}
	}
	return fmt.Errorf("ack trigger: %w", err)
}

// handBack returns a trigger to the group for another worker. The delay
// lets this worker's open pull requests expire first (fetch.go), so the
// trigger does not bounce back here and burn a delivery.
func (w *Worker) handBack(msg jetstream.Msg, log *zap.Logger, reason string) {
	if err := msg.NakWithDelay(w.handBackDelay(time.Now())); err != nil {
		log.Warn("handing trigger back failed; it will be redelivered after the ack wait",
			zap.String("reason", reason), zap.Error(err))
		return
	}
	log.Info("trigger handed back", zap.String("reason", reason))
}

// handBackDelay is how long a trigger handed back now must wait before it
// is offered again: until every pull request this worker has open expires
// (plus a little, for the server to see them expire), or not at all when it
// has none. A stopping worker sends no new ones, so the triggers it hands
// back reach a live worker as soon as they can.
func (w *Worker) handBackDelay(now time.Time) time.Duration {
	var d time.Duration
	for _, l := range w.lanes {
		d = max(d, l.openFor(now))
	}
	if d == 0 {
		return 0
	}
	return d + handBackMargin
}

// handBackMargin covers the time between a pull request's expiry and the
// server dropping it.
const handBackMargin = 50 * time.Millisecond

// backoff is an exponential delay with jitter, from 100ms to 5s.
type backoff struct{ d time.Duration }

func (b *backoff) next() time.Duration {
	switch {
	case b.d == 0:
		b.d = 100 * time.Millisecond
	case b.d < 5*time.Second:
		b.d = min(2*b.d, 5*time.Second)
	}
	// ±20% so that workers that failed together do not retry together.
	return b.d - b.d/5 + rand.N(2*b.d/5+1)
}

func (b *backoff) reset() { b.d = 0 }

// sleepCtx waits d and reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
