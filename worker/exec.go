package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/joblock"
	"github.com/jetjob/jetjob/worker/internal/kills"
)

// run is one execution of a run in this process.
type run struct {
	w    *Worker
	trig *wire.Trigger
	// secrets are the run's secrets, nil until fetched (secrets.go) and
	// for a job without any.
	secrets  *runSecrets
	delivery uint64 // the delivery that started this execution
	mayStart bool   // it may have started before, on a worker that died (started.go)
	// waitedLock: the job's lock was held when this run asked (block),
	// for the lock-wait metric.
	waitedLock bool
	origin     stored // where and when that delivery's trigger was stored
	log        *zap.Logger
	logs       *runLog
	trace      runSpan // set on receipt when tracing is on (trace.go)
	// slot is the run slot of the trigger's lane, given back while a late
	// trigger is judged (judge.go); nil: the run keeps whatever it has.
	slot *slotHold

	mu      sync.Mutex
	msgs    []jetstream.Msg // every delivery joined to this execution
	settled bool            // msgs have been acked or handed back
	// stop cancels the handler's context with a cause; nil until the
	// handler starts. A kill that arrives before keeps its cause in
	// pending, and the handler never starts.
	stop    context.CancelCauseFunc
	pending error

	// state tells the handler goroutine and its supervisor apart when a
	// handler returns just as it is being abandoned: whoever moves it out of
	// handlerRunning first decides.
	state atomic.Int32

	// output is what the handler set with Job.SetOutput.
	output outputBox
	// mapped is what the handler mapped with Job.Map, and reduces whether
	// its handler has a reduce (mapreduce.go); outputs are a reduce run's
	// parts' outputs, fetched before its reduce runs.
	mapped  outputBox
	reduces bool
	outputs []json.RawMessage
}

const (
	handlerRunning int32 = iota
	handlerReturned
	handlerAbandoned
)

// stored is a trigger's place in JETJOB_TRIGGERS, from its delivery's
// metadata: the run's events carry it (wire.Event.TriggerSeq).
type stored struct {
	seq uint64
	at  time.Time
}

func newRun(w *Worker, trig *wire.Trigger, msg jetstream.Msg, delivery uint64, origin stored, log *zap.Logger) *run {
	return &run{
		w: w, trig: trig, delivery: delivery, origin: origin,
		log:  log.WithLazy(zap.String("handler", trig.Handler)),
		logs: newRunLog(w, trig.RunID, trig.JobID),
		msgs: []jetstream.Msg{msg},
	}
}

// join adds another delivery of the run; acks and naks then cover it too.
// It reports false once the execution has settled its deliveries.
func (r *run) join(msg jetstream.Msg) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.settled {
		return false
	}
	r.msgs = append(r.msgs, msg)
	return true
}

// current returns the deliveries to keep alive, none once settled.
func (r *run) current() []jetstream.Msg {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.settled {
		return nil
	}
	return append([]jetstream.Msg(nil), r.msgs...)
}

// settle returns the deliveries to ack or hand back, and stops joins.
func (r *run) settle() []jetstream.Msg {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settled = true
	return r.msgs
}

// cancel stops the execution with cause (a kill): the handler's context
// ends now, or the handler does not start.
func (r *run) cancel(cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop != nil {
		r.stop(cause)
		return
	}
	r.pending = cause
}

// outcome is how an execution ends: a result to report, a hand-back, or
// an acknowledgement alone.
type outcome struct {
	status  wire.Status
	message string
	// workerID is the worker the result is about when not this one (a run
	// LOST with the worker that died).
	workerID string
	handBack string // reason; non-empty means hand the trigger back
	// settleOnly: the run's result is already known; the trigger is
	// acknowledged with this reason, and nothing is reported.
	settleOnly string
}

// execute runs the trigger and reports whether its result was published.
// ctx ends when the worker stops taking triggers: a run that has not
// started its handler by then is handed back.
func (r *run) execute(ctx context.Context) bool {
	stop := r.w.keepAlive(r.log, r.current)
	defer stop()

	// A trigger that may have reached a worker before is checked first: a
	// run that started must not start again under the same attempt,
	// however late (started.go).
	if r.mayStart {
		if out := r.priorStart(ctx); out != nil {
			return r.end(*out)
		}
	}
	// The misfire policy is judged next: a trigger too late to run is
	// EXPIRED whatever this worker could have done with it. No started
	// event: no handler ever started. Every delivery is judged: a trigger
	// handed back by a stopping worker comes back as a redelivery, and a
	// late one must not run; a run whose worker died mid-way and that comes
	// back late ends EXPIRED too, as its job's policy asks of late fires.
	// A first delivery late on receipt is judged without its run slot;
	// judged to run, it waits for the next slot ahead of new pull requests
	// (judge.go). Once judged, it is not judged again.
	if goOn, reported := r.misfire(); !goOn {
		return reported
	}
	if r.w.kills.Killed(r.trig.RunID) {
		return r.finish(outcome{status: wire.StatusCancelled, message: "killed before it started"})
	}
	h := r.w.lookup(r.trig.Handler)
	if h == nil {
		// No started event: no handler ever started.
		return r.finish(outcome{status: wire.StatusFailed, message: fmt.Sprintf(
			"no handler %q registered on worker %s (group %s)", r.trig.Handler, r.w.cfg.ID, r.w.cfg.Group)})
	}
	if ctx.Err() != nil {
		r.handBack("worker stopping before the run started")
		return false
	}
	asked := time.Now()
	endLock := r.traceLock()
	lock, blocked := r.block(ctx)
	endLock(blocked)
	r.w.metrics.lockWaited(r, asked)
	if blocked != nil {
		return r.end(*blocked)
	}
	// Held until the result is published: the job's next run starts after.
	defer lock.Release()
	started := wire.Event{
		Kind: wire.EventStarted, RunID: r.trig.RunID, JobID: r.trig.JobID, WorkerID: r.w.cfg.ID,
		Status: wire.StatusRunning, At: time.Now().UTC(), ScheduledAt: r.trig.ScheduledAt,
		TriggerSeq: r.origin.seq, TriggeredAt: r.origin.at,
	}
	// The handler starts once the start is recorded. Publishing fails only
	// when the stop gives up on publishing altogether; nothing has run
	// then, so the trigger goes back.
	if err := r.publishEvent(started); err != nil {
		r.handBack("started event not published before the stop: " + err.Error())
		return false
	}
	if out := r.fetchSecrets(ctx); out != nil {
		return r.end(*out)
	}
	if out := r.fetchOutputs(ctx, h); out != nil {
		return r.end(*out)
	}
	r.reduces = h.reduce != nil
	r.w.signals.started.Signal(laneRun{lane: r.slot.l.name, run: r.trig.RunID})
	ran := r.w.metrics.handlerStarted(h.name)
	out := r.runHandler(ctx, h)
	ran()
	return r.end(out)
}

// block applies the run's block strategy (package joblock) before its
// handler starts. It returns the lock to hold while the run executes, or
// an outcome that ends the run without running it: DISCARDED, CANCELLED
// (killed while waiting), or a hand-back (the worker stops: ctx ends).
func (r *run) block(ctx context.Context) (*joblock.Lock, *outcome) {
	req := joblock.Request{
		Run: r.trig.RunID, Job: r.trig.JobID, FireAt: r.trig.ScheduledAt,
		ShardIndex: r.trig.ShardIndex, ShardTotal: r.trig.ShardTotal,
		Strategy: r.trig.BlockStrategy, MaxConcurrency: r.trig.MaxConcurrency,
		Log: r.log, Interrupt: func() error { return r.interrupted(ctx) },
	}
	if r.trig.Flow != nil {
		r.flowRequest(&req)
	}
	lock, waited, err := r.w.locks.Acquire(ctx, req)
	r.waitedLock = waited
	if err != nil {
		return nil, blockedBy(err)
	}
	return lock, nil
}

// blockedBy is the outcome of a run that Acquire did not let start: apart
// from block, so that the targets errors.As needs (on the heap) cost only
// such runs.
func blockedBy(err error) *outcome {
	var discarded *joblock.DiscardedError
	var skipped *joblock.SkippedError
	var stop interruption
	switch {
	case errors.As(err, &discarded):
		return &outcome{status: wire.StatusDiscarded, message: discarded.Error()}
	case errors.As(err, &skipped):
		return &outcome{status: wire.StatusSkipped, message: skipped.Error()}
	case errors.As(err, &stop):
		return &stop.out
	}
	return &outcome{handBack: err.Error()}
}

// flowRequest adds the trigger's flow controls (docs/flow-control.md) to
// req: its group's cap and rate, its concurrency key's slots and rate.
// A run whose turn under a rate limit would make it later than its misfire
// threshold is judged as if it had arrived that late (expired, the
// late-trigger logic of misfire.go): when its policy skips it, it ends
// SKIPPED and takes no turn.
func (r *run) flowRequest(req *joblock.Request) {
	req.Flow, req.Group = r.trig.Flow, r.trig.Group
	req.FlowWaited = r.w.metrics.flowWaited
	if len(r.trig.Flow.Rates) > 0 {
		req.Late = func(turn time.Time) string {
			if late, msg := expired(r.trig, r.w.cfg.ID, turn); late {
				return msg
			}
			return ""
		}
	}
}

// interruption is why a run waiting for its job's lock stops waiting, as
// the outcome it ends with.
type interruption struct{ out outcome }

func (i interruption) Error() string { return cmp.Or(i.out.message, i.out.handBack) }

// interrupted says whether the run waiting for its job's lock was killed
// or the worker stops (ctx ended).
func (r *run) interrupted(ctx context.Context) error {
	r.mu.Lock()
	pending := r.pending
	r.mu.Unlock()
	what := "the job's active run"
	if r.trig.Flow != nil {
		what = "the job's active run or its flow controls (caps, rate limits)"
	}
	if pending != nil {
		return interruption{outcome{status: wire.StatusCancelled, message: pending.Error() + " (while waiting for " + what + ")"}}
	}
	if r.w.kills.Killed(r.trig.RunID) {
		return interruption{outcome{status: wire.StatusCancelled, message: "killed while waiting for " + what}}
	}
	if ctx.Err() != nil {
		return interruption{outcome{handBack: "worker stopping while the run waited for " + what}}
	}
	return nil
}

// end settles the execution as out says and reports whether a result was
// published (or was known already).
func (r *run) end(out outcome) bool {
	switch {
	case out.handBack != "":
		r.handBack(out.handBack)
		return false
	case out.settleOnly != "":
		r.log.Info("redelivered trigger acknowledged without running", zap.String("reason", out.settleOnly))
		r.ack()
		return true
	}
	return r.finish(out)
}

// finish publishes the result, then acks every delivery of the run.
func (r *run) finish(out outcome) bool {
	if dropped := r.logs.flush(); dropped > 0 {
		r.log.Warn("job log lines could not be published", zap.Int64("dropped", dropped))
	}
	ev := wire.Event{
		Kind: wire.EventFinished, RunID: r.trig.RunID, JobID: r.trig.JobID, WorkerID: cmp.Or(out.workerID, r.w.cfg.ID),
		Status: out.status, Message: wire.TruncateMessage(r.secrets.maskString(out.message)), At: time.Now().UTC(),
		ScheduledAt: r.trig.ScheduledAt, TriggerSeq: r.origin.seq, TriggeredAt: r.origin.at,
		Output: r.maskedOutput(),
	}
	r.mappedEvent(&ev)
	if err := r.publishEvent(ev); err != nil {
		r.log.Error("run result not published", zap.String("status", string(out.status)), zap.Error(err))
		r.handBack("result not published")
		return false
	}
	r.w.metrics.finished(r.handlerLabel(), out.status)
	lvl := zap.InfoLevel
	if out.status != wire.StatusSucceeded && out.status != wire.StatusExpired {
		lvl = zap.WarnLevel // EXPIRED is the job's policy at work, not a fault
	}
	if ce := r.log.Check(lvl, "run finished"); ce != nil {
		ce.Write(zap.String("status", string(out.status)), zap.String("message", ev.Message))
	}
	r.ack()
	return true
}

// publishEvent hands ev to the event publisher and waits until it is
// stored (package runevents); traceparent is the run's trace context, "" for
// none.
func (w *Worker) publishEvent(ev wire.Event, traceparent string) error {
	defer w.metrics.eventQueued()()
	return w.events.Publish(ev, traceparent)
}

// ack acknowledges every delivery of the run.
func (r *run) ack() {
	for _, m := range r.settle() {
		if err := r.w.ackMsg(m); err != nil {
			r.log.Warn("trigger not acknowledged; a redelivery will be recognised as finished", zap.Error(err))
		}
	}
}

func (r *run) handBack(reason string) {
	for _, m := range r.settle() {
		r.w.handBack(m, r.log, reason)
	}
}

// handlerResult is what the handler goroutine reports.
type handlerResult struct {
	err      error
	panicked bool
	panicVal any
	stack    []byte
	goexit   bool
	// cause is why the handler's context was done when it returned, nil if
	// it was not: the result is judged at return time, not when read.
	cause error
}

// runHandler runs the handler under the run's timeout and supervises it.
// Its context carries ctx's values, and is cancelled by a kill, by the run's
// timeout and at the end of the shutdown grace (handlersEnd), not when ctx
// ends.
func (r *run) runHandler(ctx context.Context, h *handler) (out outcome) {
	ctx, cancel := r.w.handlersEnd.bind(context.WithoutCancel(ctx))
	defer cancel(nil)
	ctx, endSpan := r.traceHandler(ctx)
	defer func() { endSpan(&out) }()
	r.mu.Lock()
	r.stop = cancel
	pending := r.pending
	r.mu.Unlock()
	if pending != nil {
		return outcome{status: wire.StatusCancelled, message: pending.Error() + " (before its handler started)"}
	}
	if t := r.trig.Timeout(); t > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeoutCause(ctx, t, errRunTimeout)
		defer cancelT()
	}
	done := make(chan handlerResult, 1)
	go r.call(ctx, r.handlerFunc(h), r.job(), done)

	select {
	case res := <-done:
		return r.judge(res)
	case <-ctx.Done():
	}
	abandon := time.NewTimer(r.w.cfg.AbandonGrace)
	defer abandon.Stop()
	select {
	case res := <-done:
		return r.judge(res)
	case <-abandon.C:
	}
	if !r.state.CompareAndSwap(handlerRunning, handlerAbandoned) {
		return r.judge(<-done) // it returned just now
	}
	r.w.counts.abandonedTotal.Add(1)
	r.w.counts.abandonedLive.Add(1)
	cause := context.Cause(ctx)
	r.log.Warn("handler ignored its cancelled context: abandoned, its goroutine is left running",
		zap.NamedError("cause", cause), zap.Duration("abandon_grace", r.w.cfg.AbandonGrace),
		zap.Int64("abandoned_running", r.w.counts.abandonedLive.Load()))
	if errors.Is(cause, errShutdown) {
		return r.cutShort("the handler did not stop when cancelled and was abandoned")
	}
	var ke kills.Error
	if errors.As(cause, &ke) {
		return outcome{status: wire.StatusCancelled, message: fmt.Sprintf(
			"%s; the handler ignored cancellation and was abandoned after %s", ke, r.w.cfg.AbandonGrace)}
	}
	return outcome{status: wire.StatusTimedOut, message: fmt.Sprintf(
		"timed out after %s; the handler ignored cancellation and was abandoned after %s",
		r.trig.Timeout(), r.w.cfg.AbandonGrace)}
}

// call runs the handler and reports how it ended, unless it was abandoned
// meanwhile: then nobody listens, and it only updates the counters.
func (r *run) call(ctx context.Context, fn HandlerFunc, job *Job, done chan<- handlerResult) {
	var res handlerResult
	returned := false
	defer func() {
		if !returned {
			if p := recover(); p != nil {
				res.panicked, res.panicVal, res.stack = true, p, debug.Stack()
			} else {
				res.goexit = true
			}
		}
		if ctx.Err() != nil {
			res.cause = context.Cause(ctx)
		}
		if !r.state.CompareAndSwap(handlerRunning, handlerReturned) {
			r.w.counts.abandonedLive.Add(-1)
			r.log.Info("abandoned handler returned at last")
			r.w.signals.abandonedReturned.Signal(r.trig.RunID)
			return
		}
		done <- res
	}()
	res.err = fn(ctx, job)
	returned = true
}

// judge turns how the handler ended into an outcome (see the package doc).
func (r *run) judge(res handlerResult) outcome {
	switch {
	case res.panicked:
		r.log.Error("handler panicked", zap.Any("panic", res.panicVal), zap.ByteString("stack", res.stack))
		return outcome{status: wire.StatusFailed, message: fmt.Sprintf("panic: %v", res.panicVal)}
	case res.goexit:
		return outcome{status: wire.StatusFailed, message: "handler called runtime.Goexit"}
	case errors.Is(res.cause, errRunTimeout):
		msg := fmt.Sprintf("timed out after %s", r.trig.Timeout())
		if res.err != nil && !errors.Is(res.err, context.DeadlineExceeded) && !errors.Is(res.err, context.Canceled) {
			msg += ": " + res.err.Error()
		}
		return outcome{status: wire.StatusTimedOut, message: msg}
	case errors.As(res.cause, new(kills.Error)):
		return outcome{status: wire.StatusCancelled, message: res.cause.Error()}
	case errors.Is(res.cause, errShutdown) && res.err != nil:
		return r.cutShort(res.err.Error())
	case res.err != nil:
		return outcome{status: wire.StatusFailed, message: res.err.Error()}
	}
	return outcome{status: wire.StatusSucceeded}
}

// cutShort is the outcome of a handler the worker's stop cut short:
// LOST, not handed back, since its attempt has started and must not start
// again (started.go); the job's retry policy decides what follows.
func (r *run) cutShort(detail string) outcome {
	return outcome{status: wire.StatusLost, message: fmt.Sprintf(
		"its worker %s stopped while it ran (shutdown grace %s over): %s", r.w.cfg.ID, r.w.cfg.ShutdownGrace, detail)}
}
