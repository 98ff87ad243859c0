package worker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// At most one execution per run and attempt reaches a handler
// (docs/architecture.md, invariant 2), even when the worker running it dies.
//
// A trigger's first delivery cannot have started anywhere, and a run that
// executes here is never started twice (claim). But a trigger delivered
// again, or moved to the shared queue off a dead worker's directed one
// (stream.ReroutedHeader), may have started on a worker that died or lost
// its connection. Its started event is the start claim: a worker publishes
// it, and waits for JetStream to store it, before it calls the handler. So
// before running such a trigger the worker asks the schedulers whether the
// run had started (stream.StartCheck, answered from PostgreSQL once every
// event stored before the question is applied):
//
//   - it had not: the trigger runs as usual (a worker handed it back, or
//     died before its handler started);
//   - it ended meanwhile: the trigger is acknowledged, nothing runs;
//   - it started on a worker that still runs it (it missed its in-progress
//     acks): this worker waits, asking again, and keeps the trigger;
//   - it started on a worker that no longer runs it: the run ends LOST,
//     naming that worker, and the job's retry policy decides whether a new
//     attempt runs.
//
// Until the schedulers can answer with certainty (none is up, PostgreSQL is
// down, events are still being applied) the worker keeps asking and keeps
// the trigger in progress: it never guesses. The question costs nothing on
// a first delivery, which is nearly every trigger.

// startTimeout bounds one question; retryStartCheck is the pause before
// asking again after no certain answer.
const (
	startTimeout    = 5 * time.Second
	retryStartCheck = time.Second
)

// maxStartAsks bounds the start check requests on their way at once.
const maxStartAsks = 4

// startAsk is one query waiting for its answer.
type startAsk struct {
	q   wire.StartQuery
	res chan startAnswer
}

type startAnswer struct {
	run wire.RunStart
	err error
}

// mayHaveStarted says whether a delivery of a trigger may come after its
// run started on some worker: a redelivery, or a copy moved off a dead
// worker's queue after that worker had it.
func mayHaveStarted(msg jetstream.Msg, delivery uint64) bool {
	if delivery > 1 {
		return true
	}
	if h := msg.Headers(); h != nil {
		n, err := strconv.ParseUint(h.Get(stream.ReroutedHeader), 10, 64)
		return err == nil && n > 0
	}
	return false
}

// newStartChecker returns the group commit of w's start checks: the
// redeliveries after a worker's death are asked about in a few requests.
func (w *Worker) newStartChecker() *groupCommit[*startAsk] {
	return newGroupCommit(wire.MaxStartQueries, maxStartAsks, func(batch []*startAsk) {
		req := wire.StartRequest{Queries: make([]wire.StartQuery, len(batch))}
		for i, a := range batch {
			req.Queries[i] = a.q
		}
		var reply wire.StartReply
		err := w.askSchedulers(stream.StartCheck, &req, &reply, startTimeout)
		if err == nil && len(reply.Runs) != len(batch) {
			err = fmt.Errorf("start check: %d answers for %d queries", len(reply.Runs), len(batch))
		}
		for i, a := range batch {
			if err != nil {
				a.res <- startAnswer{err: err}
			} else {
				a.res <- startAnswer{run: reply.Runs[i]}
			}
		}
	}, func(a *startAsk) { a.res <- startAnswer{err: errEventsStopped} })
}

// askSchedulers sends req to the schedulers' queue group on subject and
// decodes their answer into reply; an answer with an error is an error.
func (w *Worker) askSchedulers(subject string, req, reply any, timeout time.Duration) error {
	data, err := wire.EncodeControl(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(w.pubCtx, timeout)
	defer cancel()
	msg, err := w.cfg.NATS.RequestWithContext(ctx, subject, data)
	if err != nil {
		return fmt.Errorf("ask the schedulers on %s: %w", subject, err)
	}
	if err := wire.DecodeControl(msg.Data, reply); err != nil {
		return fmt.Errorf("answer on %s: %w", subject, err)
	}
	var e string
	switch r := reply.(type) {
	case *wire.StartReply:
		e = r.Error
	case *wire.SupersedeReply:
		e = r.Error
	}
	if e != "" {
		return fmt.Errorf("schedulers on %s: %s", subject, e)
	}
	return nil
}

// priorStart applies the start check to a trigger that may have started
// before (see the top of this file). It returns nil when the run is to
// start here, or how the execution ends instead.
func (r *run) priorStart() *outcome {
	for attempt := 0; ; attempt++ {
		a := &startAsk{q: wire.StartQuery{RunID: r.trig.RunID, ScheduledAt: r.trig.ScheduledAt}, res: make(chan startAnswer, 1)}
		ans, ok := await(r.w.starts, a, a.res)
		if !ok {
			ans.err = errEventsStopped
		}
		prior := ans.run
		switch {
		case ans.err != nil:
			if attempt%10 == 0 {
				r.log.Warn("cannot learn yet whether the redelivered run had started elsewhere; asking again",
					zap.Error(ans.err))
			}
		case prior.Status.Terminal():
			return &outcome{settleOnly: fmt.Sprintf("run already ended %s: the trigger is acknowledged, nothing runs", prior.Status)}
		case !prior.Started():
			return nil
		case prior.WorkerID != r.w.cfg.ID && r.w.askRunActive(prior.WorkerID, r.trig.RunID):
			if attempt%10 == 0 {
				r.log.Warn("redelivered run still executes on another worker; waiting for it",
					zap.String("running_on", prior.WorkerID))
			}
		default:
			by := prior.WorkerID
			if by == "" {
				by = "unknown"
			}
			return &outcome{status: wire.StatusLost, workerID: prior.WorkerID, message: fmt.Sprintf(
				"its worker %s died while it ran (started %s); not run again under attempt %d: worker %s got its trigger again (delivery %d)",
				by, prior.StartedAt.Format(time.RFC3339Nano), r.trig.Attempt, r.w.cfg.ID, r.delivery)}
		}
		if !sleepCtx(r.w.stopCtx, retryStartCheck) {
			return &outcome{handBack: "worker stopping before it learnt whether the run had started elsewhere"}
		}
	}
}

// askRunActive asks worker id whether run executes there. No answer (the
// worker is gone) is "no".
func (w *Worker) askRunActive(id string, run int64) bool {
	if id == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(w.stopCtx, askHolderTimeout)
	defer cancel()
	reply, err := stream.Ask(ctx, w.cfg.NATS, id, wire.ControlRequest{Op: wire.OpRunActive, RunID: run})
	return err == nil && reply.Busy
}
