package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/worker/internal/joblock"
	"github.com/jetjob/jetjob/worker/internal/kills"
	"github.com/jetjob/jetjob/worker/internal/questions"
	"github.com/jetjob/jetjob/worker/internal/runevents"
)

// groupMaxAckPending is the MaxAckPending of a group's shared consumer. It
// is a constant, not derived from Concurrency, because every worker of the
// group writes the consumer's config at start: a per-worker value would flap
// between workers of different sizes, and it would have to cover the sum of
// all workers' slots anyway. The per-process bound comes from fetching only
// as many triggers as there are free slots (fetch.go).
const groupMaxAckPending = 100_000

// cancelKilled cancels run, if it executes here, on a kill request for it
// (package kills; a run not here yet is checked against the requests
// before it starts).
func (w *Worker) cancelKilled(run int64, reason string) {
	if r := w.runs.get(run); r != nil {
		w.log.Info("kill request: cancelling the run", logging.Run(run), zap.String("reason", reason))
		r.cancel(kills.Error{Reason: reason})
	}
}

// setup creates the JetStream context, provisions the streams, opens the
// job locks and kill requests, makes the event publisher and the questions
// to the schedulers, and creates or updates the worker's three consumers:
// the group's shared queue and trigger batches, and its own directed
// consumer.
func (w *Worker) setup(ctx context.Context) ([]*lane, error) {
	js, err := jetstream.New(w.cfg.NATS,
		// Job log lines are published asynchronously; without a timeout a
		// lost ack would keep its entry pending forever.
		jetstream.WithPublishAsyncTimeout(30*time.Second),
		jetstream.WithPublishAsyncErrHandler(func(jetstream.JetStream, *nats.Msg, error) {
			w.counts.logDropped.Add(1)
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("worker: jetstream: %w", err)
	}
	w.js = js
	// Existing streams are left as the schedulers provisioned them: a
	// worker's credential may only read them (stream.WorkerPermissions).
	if err := stream.Provision(ctx, js, w.streams, stream.LeaveExisting(w.log)); err != nil {
		return nil, fmt.Errorf("worker: %w%s", err, w.inboxHint())
	}
	locks, err := stream.Locks(ctx, js, w.streams)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	w.kills = kills.New(kills.Config{JS: js, Streams: w.streams, OnKill: w.cancelKilled, Logger: w.log})
	w.locks = joblock.New(joblock.Config{
		NATS: w.cfg.NATS, KV: locks, WorkerID: w.cfg.ID, TTL: w.cfg.LockTTL,
		Active: w.runs.has, Kill: w.kills.Request, Logger: w.log, TestSignals: w.signals.locks,
	})
	// The event publisher and the questions to the schedulers outlive
	// every run (stages: publishing).
	w.events = runevents.New(js, w.cfg.Group, w.cfg.ID, w.log)
	w.events.Signals = w.signals.events
	w.ask = questions.New(w.cfg.NATS, w.log)
	if w.supersedeWait > 0 {
		w.ask.SupersedeTimeout = w.supersedeWait
	}
	shared, err := js.CreateOrUpdateConsumer(ctx, stream.Triggers,
		w.groupConsumer(stream.AnyConsumer(w.cfg.Group), stream.TriggerAny(w.cfg.Group), "shared queue"))
	if err != nil {
		return nil, fmt.Errorf("worker: consumer %s: %w", stream.AnyConsumer(w.cfg.Group), err)
	}
	batches, err := js.CreateOrUpdateConsumer(ctx, stream.Triggers,
		w.groupConsumer(stream.BatchConsumer(w.cfg.Group), stream.TriggerBatch(w.cfg.Group), "trigger batches"))
	if err != nil {
		return nil, fmt.Errorf("worker: consumer %s: %w", stream.BatchConsumer(w.cfg.Group), err)
	}
	directed, err := js.CreateOrUpdateConsumer(ctx, stream.Triggers, stream.DirectedConsumerConfig(
		w.cfg.Group, w.cfg.ID, w.cfg.AckWait, w.cfg.MaxDeliver))
	if err != nil {
		return nil, fmt.Errorf("worker: consumer %s: %w", stream.WorkerConsumer(w.cfg.Group, w.cfg.ID), err)
	}
	batch := newLane(laneBatch, batches, w.cfg.Concurrency, w.maxFetches)
	batch.runsPerMsg = batchRunsGuess
	lanes := []*lane{
		newLane(laneShared, shared, w.cfg.Concurrency, w.maxFetches),
		newLane(laneDirected, directed, w.cfg.Concurrency, w.maxFetches),
		batch,
	}
	for _, l := range lanes {
		l.waitingSignal = w.signals.slotWaiting
	}
	return lanes, nil
}

// groupConsumer is the config of a consumer all workers of the group share
// (its shared queue, its trigger batches): every worker writes it at start,
// so it holds only what every worker of the group agrees on.
func (w *Worker) groupConsumer(durable, subject, what string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       durable,
		Description:   "jetjob workers of group " + w.cfg.Group + " (" + what + ")",
		FilterSubject: subject,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       w.cfg.AckWait,
		MaxDeliver:    w.cfg.MaxDeliver,
		MaxAckPending: groupMaxAckPending,
	}
}

// inboxHint explains the usual reason why a worker with a least-privilege
// credential cannot even read stream info: its connection uses the default
// inbox prefix, which the credential may not subscribe to (every reply then
// times out), instead of stream.WorkerInboxPrefix(group).
func (w *Worker) inboxHint() string {
	last := w.cfg.NATS.LastError()
	want := stream.WorkerInboxPrefix(w.cfg.Group)
	if w.cfg.NATS.Opts.InboxPrefix == want || !errors.Is(last, nats.ErrPermissionViolation) ||
		!strings.Contains(last.Error(), "_INBOX.") {
		return ""
	}
	return fmt.Sprintf(" (%v: connect with nats.CustomInboxPrefix(%q), the inboxes a group's credential may use)", last, want)
}

func (w *Worker) handlerNames() []string {
	names := make([]string, len(w.order))
	for i, h := range w.order {
		names[i] = h.name
	}
	return names
}

// initHandlers runs the init hooks in registration order and returns the
// handlers whose init succeeded (to be destroyed later).
func (w *Worker) initHandlers(ctx context.Context) ([]*handler, error) {
	var done []*handler
	for _, h := range w.order {
		if h.init != nil {
			if err := h.init(ctx); err != nil {
				return done, fmt.Errorf("worker: init of handler %q: %w", h.name, err)
			}
		}
		done = append(done, h)
	}
	return done, nil
}

// destroyHandlers runs the destroy hooks in reverse order, with a context
// that outlives Run's (it is cancelled by then) but is bounded.
func (w *Worker) destroyHandlers(ctx context.Context, hs []*handler) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.ShutdownGrace)
	defer cancel()
	var errs []error
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].destroy == nil {
			continue
		}
		if err := hs[i].destroy(dctx); err != nil {
			errs = append(errs, fmt.Errorf("worker: destroy of handler %q: %w", hs[i].name, err))
		}
	}
	return errors.Join(errs...)
}
