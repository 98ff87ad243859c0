package worker

import (
	"fmt"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// serveControl answers control requests on jetjob.ctl.<workerID> until the
// returned subscription is unsubscribed: ping (routing strategy failover
// asks it before sending a trigger here), idle beat (busyover asks
// whether a run of a job executes or waits here) and run active (another
// worker asks before taking over a job lock a run of this one left, or
// before ending LOST a redelivered run that started here). While the
// worker stops, only run active is answered, until its runs have ended and
// its locks are freed. Answers come from the
// NATS client's delivery goroutine and only read the run table, so they
// are fast and never block.
func (w *Worker) serveControl() (*nats.Subscription, error) {
	sub, err := w.cfg.NATS.Subscribe(stream.Control(w.cfg.ID), func(m *nats.Msg) {
		if m.Reply == "" {
			return
		}
		reply := wire.ControlReply{WorkerID: w.cfg.ID}
		var req wire.ControlRequest
		if err := wire.DecodeControl(m.Data, &req); err != nil {
			reply.Error = err.Error()
		} else if w.stopping.Load() && req.Op != wire.OpRunActive {
			// A stopping worker takes no triggers: unanswered, routing
			// passes it by as it would a gone one.
			return
		} else if req.Op == wire.OpIdleBeat {
			reply.Busy = w.runsJob(req.JobID)
		} else if req.Op == wire.OpRunActive {
			// Asked first: a run here that reuses the lock afterwards
			// writes the key (heldlocks.go).
			key := req.Lock // a broadcast part's lock; else the job's, if named
			if key == "" && req.JobID > 0 {
				key = lockKey(req.JobID)
			}
			holds := w.held.asked(key, req.RunID)
			reply.Busy = holds || w.runActive(req.RunID)
		}
		data, err := wire.EncodeControl(&reply)
		if err == nil {
			err = m.Respond(data)
		}
		if err != nil {
			w.log.Warn("control request not answered", zap.Error(err))
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", stream.Control(w.cfg.ID), err)
	}
	return sub, nil
}

// runsJob reports whether a run of job executes, or waits for its job's
// lock, in this process.
func (w *Worker) runsJob(job int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.active {
		if r.trig.JobID == job {
			return true
		}
	}
	return false
}

// runActive reports whether run executes, or waits for its job's lock, in
// this process.
func (w *Worker) runActive(run int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.active[run]
	return ok
}
