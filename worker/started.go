package worker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/control"
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
// event stored before the question is applied; package questions asks):
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

// retryStartCheck is the pause before asking again after no certain
// answer.
const retryStartCheck = time.Second

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

// priorStart applies the start check to a trigger that may have started
// before (see the top of this file). It returns nil when the run is to
// start here, or how the execution ends instead.
func (r *run) priorStart(ctx context.Context) *outcome {
	for attempt := 0; ; attempt++ {
		prior, err := r.w.ask.Started(wire.StartQuery{RunID: r.trig.RunID, ScheduledAt: r.trig.ScheduledAt})
		switch {
		case err != nil:
			if attempt%10 == 0 {
				r.log.Warn("cannot learn yet whether the redelivered run had started elsewhere; asking again",
					zap.Error(err))
			}
		case prior.Status.Terminal():
			return &outcome{settleOnly: fmt.Sprintf("run already ended %s: the trigger is acknowledged, nothing runs", prior.Status)}
		case !prior.Started():
			return nil
		case prior.WorkerID != r.w.cfg.ID && r.w.askRunActive(ctx, prior.WorkerID, r.trig.RunID):
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
		if backoff.Sleep(ctx, retryStartCheck) != nil {
			return &outcome{handBack: "worker stopping before it learnt whether the run had started elsewhere"}
		}
	}
}

// askRunActive asks worker id whether run executes there. No answer (the
// worker is gone) is "no"; so is the end of ctx.
func (w *Worker) askRunActive(ctx context.Context, id string, run int64) bool {
	if id == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, control.AskTimeout)
	defer cancel()
	reply, err := stream.Ask(ctx, w.cfg.NATS, id, wire.ControlRequest{Op: wire.OpRunActive, RunID: run})
	return err == nil && reply.Busy
}
