package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/supervise"
	"github.com/jetjob/jetjob/worker/internal/control"
)

// The worker's lifecycle: Run connects (setup.go), then starts the stages
// of stages() one by one, last listed first, waits until its context ends
// or a loop fails for good, and stops them in the order listed. A stage
// is a step of that order: supervised loops that run under a context of
// the stage's own, cancelled when the stage stops (never by Run's
// context), and hooks that complete its start and its stop. Like the
// scheduler's stages (scheduler/scheduler.go), the table is the one place
// that says what starts and stops when.
//
// The runs are no stage's loops: the fetching stage starts them, and the
// runs stage waits for them. What they must obey after they started is
// one of two stop steps (stopStep), each bound to the contexts their work
// makes: the end of the shutdown grace cancels their handlers
// (handlersEnd), and giving up on their results cancels their acks and
// the event publisher (resultsEnd). No context is kept in a struct: each
// stage's is made and cancelled by the runner, and each run's is passed
// down from the fetch loop that took its trigger.

// Run provisions the streams and the group's consumers, runs every
// handler's init hook, then executes triggers until ctx is cancelled. It
// then stops gracefully (see the package doc and stages), runs the destroy
// hooks and returns nil, or an error if start-up failed, a loop failed for
// good or a destroy hook failed. Run may be called once.
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
	return w.runStages(ctx, w.stages(lanes))
}

// runStages starts stages, last first, runs until ctx ends or a loop fails
// for good, then stops them in order. A stage whose start fails is
// stopped with those started before it, and Run returns the error.
func (w *Worker) runStages(ctx context.Context, stages []*stage) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	w.mu.Lock()
	w.sup.stop = stop // a loop that fails for good stops the worker (supervise.go)
	w.mu.Unlock()
	var errs []error
	started := len(stages)
	for started > 0 {
		started--
		if err := w.startStage(ctx, stages[started]); err != nil {
			errs = append(errs, err)
			break
		}
	}
	if len(errs) == 0 {
		w.log.Info("worker started",
			zap.Int("concurrency", w.cfg.Concurrency), zap.Strings("handlers", w.handlerNames()))
		<-ctx.Done()
		w.signals.stopBegun.Signal(struct{}{})
		if failure := w.failure(); failure != nil {
			errs = append(errs, failure)
		}
	}
	var failure error
	if len(errs) > 0 {
		failure = errs[0]
	}
	for _, sg := range stages[started:] {
		if err := w.stopStage(context.WithoutCancel(ctx), sg, failure); err != nil {
			errs = append(errs, err)
		}
	}
	w.log.Info("worker stopped")
	return errors.Join(errs...)
}

// flushGrace is how long, after the abandon grace that follows the
// shutdown's cancellation, results of runs that did finish may still take
// to be published and acknowledged before the worker gives up on them
// (their triggers are then redelivered).
const flushGrace = 5 * time.Second

var (
	// errShutdown is the cause of handler contexts cancelled by a stop.
	errShutdown = errors.New("worker shutting down")
	// errResultsGivenUp is the cause of the contexts of acks and of the
	// event publisher once a stop gives up on results.
	errResultsGivenUp = errors.New("worker stopping: results given up")
	// errRunTimeout is the cause of a handler context whose run timed out.
	errRunTimeout = errors.New("run timed out")
)

// stage is a step of the worker's stop order (see stages).
type stage struct {
	name  string
	loops []loop
	// endsAt, if set, also ends the stage's context when the stop
	// reaches that step, before the stage itself stops.
	endsAt *stopStep
	// start, if set, completes the start once the loops run; an error
	// fails Run, and the stage is stopped like the ones started before.
	start func(ctx context.Context) error
	// stop, if set, completes the stop once the loops have returned.
	// failure is what stops the worker, nil on a clean stop; ctx carries
	// Run's values, and is never cancelled.
	stop func(ctx context.Context, failure error) error

	cancel context.CancelFunc // set by startStage
	wg     sync.WaitGroup
}

// loop is one supervised goroutine of a stage: run returns when its
// context ends. If it returns earlier it has failed, and it is restarted
// or the worker stops, as onFailure says (supervise.go).
type loop struct {
	name      string
	run       func(context.Context) error
	onFailure supervise.Policy
}

// stages lists the parts of one Run in the order they stop; they start
// the other way round, so that whatever a part relies on runs before it.
//
//   - fetching: the lanes' fetch loops (fetch.go). They stop first: no
//     trigger is taken from then on.
//   - routing: control requests about routing (ping, idle beat) are no
//     longer answered, so that failover and busyover pass this worker by;
//     questions about its runs still are (package control).
//   - runs: the runs already here end (drainRuns): triggers that arrive on
//     pull requests still open, or wait for a slot or a job lock, are
//     handed back; the handlers get ShutdownGrace, are then cancelled
//     (handlersEnd), and their results get AbandonGrace and flushGrace
//     more before they are given up (resultsEnd).
//   - job locks: every run has ended, so the locks they left are freed
//     (handed to the next waiter, or deleted); other workers can no
//     longer ask this one about them.
//   - run questions: the control requests are no longer answered at all.
//   - publishing: the event publisher and the questions to the
//     schedulers, which the runs used until they ended (a failure stops
//     the worker: their Run owns state that cannot run twice).
//   - kill requests: their watch, which cancels runs here (restarted on
//     failure: it holds nothing). Its start waits until the requests are
//     loaded, at most killsLoadWait, so that no killed run starts.
//   - heartbeat: deregistered once nothing of the worker runs, so the
//     schedulers see it leave at once (heartbeat.go).
//   - handlers: their init hooks run first of all, their destroy hooks
//     last, after every run.
func (w *Worker) stages(lanes []*lane) []*stage {
	fetch := make([]loop, len(lanes))
	for i, l := range lanes {
		fetch[i] = loop{"fetch " + l.name, func(ctx context.Context) error { return w.fetchLoop(ctx, l) }, supervise.Stop}
	}
	var (
		ctl    *control.Server
		hb     *registration
		inited []*handler
		// killsLoaded is closed by the kill watch's first start, once
		// the requests are loaded (a restarted watch does not close it).
		killsLoaded = make(chan struct{})
		firstWatch  = killsLoaded
	)
	return []*stage{{
		name:  "fetching",
		loops: fetch,
	}, {
		name: "routing",
		stop: func(context.Context, error) error {
			if ctl != nil {
				ctl.Stopping()
			}
			return nil
		},
	}, {
		name: "runs",
		stop: func(_ context.Context, failure error) error { w.drainRuns(failure != nil); return nil },
	}, {
		name: "job locks",
		stop: func(ctx context.Context, _ error) error {
			lctx, cancel := context.WithTimeout(ctx, freeLocksWait)
			defer cancel()
			w.locks.Stop(lctx)
			return nil
		},
	}, {
		name: "run questions",
		start: func(context.Context) error {
			var err error
			if ctl, err = control.Serve(w.cfg.NATS, w.cfg.ID, answers{runs: w.runs, locks: w.locks}, w.log); err != nil {
				w.log.Warn("control requests will not be answered; failover and busyover routing will pass this worker by", zap.Error(err))
			}
			return nil
		},
		stop: func(context.Context, error) error {
			if ctl != nil {
				ctl.Stop()
			}
			return nil
		},
	}, {
		name: "publishing",
		loops: []loop{
			{"events publisher", func(ctx context.Context) error { w.events.Run(ctx); return nil }, supervise.Stop},
			{"questions", func(ctx context.Context) error { w.ask.Run(ctx); return nil }, supervise.Stop},
		},
		endsAt: &w.resultsEnd,
	}, {
		name: "kill requests",
		loops: []loop{{"kill requests", func(ctx context.Context) error {
			loaded := firstWatch
			firstWatch = nil // only this loop's goroutine reads it
			w.kills.Watch(ctx, loaded)
			return nil
		}, supervise.Restart}},
		start: func(ctx context.Context) error {
			select {
			case <-killsLoaded:
			case <-ctx.Done():
			case <-time.After(killsLoadWait):
				w.log.Warn(fmt.Sprintf("kill requests not loaded within %s; starting anyway", killsLoadWait))
			}
			return nil
		},
	}, {
		name:  "heartbeat",
		start: func(ctx context.Context) error { hb = w.startHeartbeat(ctx); return nil },
		stop: func(ctx context.Context, _ error) error {
			if hb != nil {
				hb.deregister(ctx)
			}
			return nil
		},
	}, {
		name: "handlers",
		start: func(ctx context.Context) error {
			var err error
			inited, err = w.initHandlers(ctx)
			return err
		},
		stop: func(ctx context.Context, _ error) error { return w.destroyHandlers(ctx, inited) },
	}}
}

const (
	// killsLoadWait bounds how long the start waits for the kill requests
	// to load.
	killsLoadWait = 10 * time.Second
	// freeLocksWait bounds the freeing of the job locks at the stop.
	freeLocksWait = 5 * time.Second
)

// startStage runs sg's loops, each in its own goroutine under the
// supervisor and under a context of sg's own, apart from parent's so that
// sg stops only when stopStage says; then its start hook.
func (w *Worker) startStage(parent context.Context, sg *stage) error {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	sg.cancel = cancel
	if sg.endsAt != nil {
		var cancelAt context.CancelCauseFunc
		ctx, cancelAt = sg.endsAt.bind(ctx)
		sg.cancel = func() { cancelAt(nil); cancel() }
	}
	for _, l := range sg.loops {
		sg.wg.Add(1)
		go func() {
			defer sg.wg.Done()
			// Its failure is logged, and acted on, by the supervisor.
			_ = w.supervised(ctx, l.name, l.onFailure, l.run)
		}()
	}
	if sg.start == nil {
		return nil
	}
	return sg.start(parent) // its errors say what failed
}

// stopStage ends sg's loops, waits until they all returned, then runs its
// stop hook.
func (w *Worker) stopStage(ctx context.Context, sg *stage, failure error) error {
	sg.cancel()
	sg.wg.Wait()
	if sg.stop == nil {
		return nil
	}
	return sg.stop(ctx, failure)
}

// drainRuns is the runs stage's stop, once fetching has stopped: it waits
// for the runs, cancels their handlers after ShutdownGrace, and bounds how
// long their results may take. After a failure (the connection may be
// closed) nothing could be reported or acked any more, so the handlers
// are cancelled and the results given up at once.
func (w *Worker) drainRuns(failed bool) {
	deadline := time.Now().Add(w.cfg.ShutdownGrace)
	if failed {
		w.handlersEnd.reach(errShutdown)
		w.resultsEnd.reach(errResultsGivenUp)
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
	w.handlersEnd.reach(errShutdown)
	hard := time.NewTimer(w.cfg.AbandonGrace + flushGrace)
	defer hard.Stop()
	select {
	case <-runsDone:
		return
	case <-hard.C:
	}
	w.log.Error("results still unpublished at the end of the stop; their triggers will be redelivered",
		zap.Int("running", w.Stats().Running))
	w.resultsEnd.reach(errResultsGivenUp)
	<-runsDone // every wait in a run is bounded by resultsEnd or AbandonGrace now
}

// A stopStep is a moment of the stop that work begun before it obeys: a
// run's handler the end of the shutdown grace, its acks (and the event
// publisher) the end of the wait for results. Such work binds a context
// of its own to the step and passes it on; reach cancels every context
// bound, with the step's cause, and one bound later is cancelled at once.
type stopStep struct {
	mu    sync.Mutex
	cause error // set by reach
	next  uint64
	bound map[uint64]context.CancelCauseFunc
}

// bind returns a context derived from parent that the step cancels, and
// its cancel function, which also unbinds it: call it once the work is
// done.
func (s *stopStep) bind(parent context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	s.mu.Lock()
	if cause := s.cause; cause != nil {
		s.mu.Unlock()
		cancel(cause)
		return ctx, cancel
	}
	if s.bound == nil {
		s.bound = make(map[uint64]context.CancelCauseFunc)
	}
	id := s.next
	s.next++
	s.bound[id] = cancel
	s.mu.Unlock()
	return ctx, func(cause error) {
		s.mu.Lock()
		delete(s.bound, id)
		s.mu.Unlock()
		cancel(cause)
	}
}

// reach cancels every context bound to the step with cause; only the
// first call does anything.
func (s *stopStep) reach(cause error) {
	s.mu.Lock()
	if s.cause != nil {
		s.mu.Unlock()
		return
	}
	s.cause = cause
	bound := s.bound
	s.bound = nil
	s.mu.Unlock()
	for _, cancel := range bound {
		cancel(cause)
	}
}
