package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/supervise"
	"github.com/jetjob/jetjob/worker/internal/control"
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

// flushGrace is how long, after the abandon grace that follows the
// shutdown's cancellation, results of runs that did finish may still take
// to be published and acknowledged before the worker gives up on them
// (their triggers are then redelivered).
const flushGrace = 5 * time.Second

var (
	// errShutdown is the cause of handler contexts cancelled by a stop.
	errShutdown = errors.New("worker shutting down")
	// errRunTimeout is the cause of a handler context whose run timed out.
	errRunTimeout = errors.New("run timed out")
)

// Run provisions the streams and the group's consumer, runs every handler's
// init hook, then executes triggers until ctx is cancelled. It then stops
// gracefully (see the package doc), runs the destroy hooks and returns nil,
// or an error if start-up failed or a destroy hook failed. Run may be called
// once.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return errors.New("worker: Run called twice")
	}
	w.started = true
	w.mu.Unlock()
	if len(w.order) == 0 {
		return errors.New("worker: no handlers registered")
	}

	lanes, err := w.setup(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
		return err
	}
	w.lanes = lanes
	inited, err := w.initHandlers(ctx)
	if err != nil {
		destroyErr := w.destroyHandlers(ctx, inited)
		return errors.Join(err, destroyErr)
	}

	stopCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	w.mu.Lock()
	w.sup.stop = stop // a loop that fails for good stops fetching (supervise.go)
	w.mu.Unlock()
	hctx, cancelHandlers := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelHandlers(nil)
	pubCtx, cancelPub := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelPub()
	w.stopCtx, w.hctx, w.pubCtx = stopCtx, hctx, pubCtx
	// The event publisher and the questions to the schedulers outlive
	// every run: they stop after shutdown.
	w.events = runevents.New(w.js, w.cfg.Group, w.cfg.ID, w.log)
	w.ask = questions.New(w.cfg.NATS, w.log)
	if w.supersedeWait > 0 {
		w.ask.SupersedeTimeout = w.supersedeWait
	}
	evCtx, stopEvents := context.WithCancel(pubCtx)
	defer stopEvents()
	go func() {
		_ = w.supervised(evCtx, "events publisher", supervise.Stop, func(ctx context.Context) error { w.events.Run(ctx); return nil })
	}()
	go func() {
		_ = w.supervised(evCtx, "questions", supervise.Stop, func(ctx context.Context) error { w.ask.Run(ctx); return nil })
	}()

	w.log.Info("worker started",
		zap.Int("concurrency", w.cfg.Concurrency), zap.Strings("handlers", w.handlerNames()))
	hb := w.startHeartbeat(ctx) // until deregistered (heartbeat.go)
	killCtx, stopKills := context.WithCancel(ctx)
	killsDone, killsLoaded := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(killsDone)
		loaded := killsLoaded
		_ = w.supervised(killCtx, "kill requests", supervise.Restart, func(ctx context.Context) error {
			l := loaded
			loaded = nil // closed by the first watch, or never
			w.kills.Watch(ctx, l)
			return nil
		})
	}()
	select {
	case <-killsLoaded:
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		w.log.Warn("kill requests not loaded within 10s; starting anyway")
	}
	// Control requests (ping, idle beat) are answered while this worker
	// takes triggers: a stopping worker must not be picked by failover.
	ctl, err := control.Serve(w.cfg.NATS, w.cfg.ID, answers{runs: w.runs, locks: w.locks}, w.log)
	if err != nil {
		w.log.Warn("control requests will not be answered; failover and busyover routing will pass this worker by", zap.Error(err))
	}
	// fetchAll returns when ctx is cancelled (a clean stop, nil) or when
	// fetching can never work again (the caller closed the connection).
	fatal := w.fetchAll(lanes, stop)
	if fatal == nil {
		fatal = w.failure() // a loop that stopped the worker
	}
	// From now on only questions about runs are answered: workers waiting
	// for a job lock a run of this one holds must learn when it ends,
	// while routing must pass this worker by.
	ctl.Stopping()
	w.shutdown(fatal != nil, cancelHandlers, cancelPub)
	// Every run has ended: free the job locks they left, which other
	// workers can no longer ask this one about.
	lctx, cancelLocks := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	w.locks.Stop(lctx)
	cancelLocks()
	ctl.Stop()
	stopEvents()
	<-w.events.Done()
	<-w.ask.Done()
	stopKills()
	<-killsDone
	hb.deregister(ctx)

	if err := w.destroyHandlers(ctx, inited); err != nil {
		fatal = errors.Join(fatal, err)
	}
	w.log.Info("worker stopped")
	return fatal
}

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
// job locks and kill requests, and creates or updates the worker's three
// consumers: the group's shared queue and trigger batches, and its own
// directed consumer.
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
	if err := stream.Provision(ctx, js, w.cfg.Streams, stream.LeaveExisting(w.log)); err != nil {
		return nil, fmt.Errorf("worker: %w%s", err, w.inboxHint())
	}
	locks, err := stream.Locks(ctx, js, w.cfg.Streams)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	w.kills = kills.New(kills.Config{JS: js, Streams: w.cfg.Streams, OnKill: w.cancelKilled, Logger: w.log})
	w.locks = joblock.New(joblock.Config{
		NATS: w.cfg.NATS, KV: locks, WorkerID: w.cfg.ID, TTL: w.cfg.LockTTL,
		Active: w.runs.has, Kill: w.kills.Request, Logger: w.log,
	})
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
	return []*lane{
		newLane(laneShared, shared, w.cfg.Concurrency, w.maxFetches),
		newLane(laneDirected, directed, w.cfg.Concurrency, w.maxFetches),
		batch,
	}, nil
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

// fetchAll runs one fetch loop per lane, supervised, until the worker
// stops; a fatal error of one loop stops the others through stop, and so
// does a loop that returns early or panics (supervise.go).
func (w *Worker) fetchAll(lanes []*lane, stop context.CancelCauseFunc) error {
	errs := make([]error, len(lanes))
	var wg sync.WaitGroup
	for i, l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var fatal error // the loop's own: it stopped the worker itself
			errs[i] = w.supervised(w.stopCtx, "fetch "+l.name, supervise.Stop, func(context.Context) error {
				fatal = w.fetchLoop(l, stop)
				return fatal
			})
			if errs[i] == nil {
				errs[i] = fatal
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// shutdown runs once fetching has stopped: it waits for the runs, cancels
// them after ShutdownGrace, and bounds how long their results may take.
// After a fatal error (the connection is closed) nothing could be reported
// or acked any more, so the runs are cancelled at once.
func (w *Worker) shutdown(fatal bool, cancelHandlers context.CancelCauseFunc, cancelPub context.CancelFunc) {
	deadline := time.Now().Add(w.cfg.ShutdownGrace)
	if fatal {
		cancelHandlers(errShutdown)
		cancelPub()
	}
	w.log.Info("worker stopping", zap.Int("running", w.Stats().Running),
		zap.Duration("shutdown_grace", w.cfg.ShutdownGrace))
	// Drainers may still start runs (only to hand them back), so they
	// end before procs.Wait starts: a WaitGroup must not grow during Wait.
	w.fetchers.Wait()

	runsDone := make(chan struct{})
	go func() { w.procs.Wait(); close(runsDone) }()
	grace := time.NewTimer(time.Until(deadline))
	defer grace.Stop()
	select {
	case <-runsDone:
		return
	case <-grace.C:
	}
	w.log.Warn("shutdown grace over: cancelling running handlers", zap.Int("running", w.Stats().Running))
	cancelHandlers(errShutdown)
	hard := time.NewTimer(w.cfg.AbandonGrace + flushGrace)
	defer hard.Stop()
	select {
	case <-runsDone:
		return
	case <-hard.C:
	}
	w.log.Error("results still unpublished at the end of the stop; their triggers will be redelivered",
		zap.Int("running", w.Stats().Running))
	cancelPub()
	<-runsDone // every wait in a run is bounded by pubCtx or AbandonGrace now
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
