// Package control answers the control requests other processes send a
// worker on jetjob.ctl.<workerID> (docs/protocol.md, "Control requests"):
// ping (routing strategy failover asks it before sending a trigger
// here), idle_beat (busyover asks whether a run of a job executes or waits
// here) and run_active (another worker asks before taking over a job lock
// a run of this one left, or before ending LOST a redelivered run that
// started here). While the worker stops, only run_active is answered,
// until its runs have ended and its locks are freed: routing passes a
// stopping worker by, but workers waiting for a lock one of its runs holds
// must learn when that run ends.
//
// Answers come from the NATS client's delivery goroutine and only ask the
// worker's Answers, which read in-memory tables, so they are fast and never
// block.
package control

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// AskTimeout bounds a worker's run_active question to another worker
// (before taking over a job lock, and in the start check); no answer in
// time counts as none.
const AskTimeout = 500 * time.Millisecond

// Answers is what the server asks of its worker.
type Answers interface {
	// RunsJob reports whether a run of job executes, or waits for its
	// job's lock, here (idle_beat).
	RunsJob(job int64) bool
	// RunActive reports whether run executes or waits here, or a run here
	// holds a lock under its name (run_active; lock is the key the asker
	// names, "" for job's own).
	RunActive(job int64, lock string, run int64) bool
}

// Server answers one worker's control requests.
type Server struct {
	sub      *nats.Subscription
	stopping atomic.Bool
}

// Serve subscribes to workerID's control subject and answers from a until
// Stop.
func Serve(nc *nats.Conn, workerID string, a Answers, log *zap.Logger) (*Server, error) {
	s := &Server{}
	sub, err := nc.Subscribe(stream.Control(workerID), func(m *nats.Msg) {
		if m.Reply == "" {
			return
		}
		reply, ok := s.answer(workerID, a, m.Data)
		if !ok {
			return
		}
		data, err := wire.EncodeControl(&reply)
		if err == nil {
			err = m.Respond(data)
		}
		if err != nil {
			log.Warn("control request not answered", zap.Error(err))
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", stream.Control(workerID), err)
	}
	s.sub = sub
	return s, nil
}

// answer is the reply to one request, or false for none.
func (s *Server) answer(workerID string, a Answers, data []byte) (wire.ControlReply, bool) {
	reply := wire.ControlReply{WorkerID: workerID}
	var req wire.ControlRequest
	switch err := wire.DecodeControl(data, &req); {
	case err != nil:
		reply.Error = err.Error()
	case s.stopping.Load() && req.Op != wire.OpRunActive:
		// A stopping worker takes no triggers: unanswered, routing
		// passes it by as it would a gone one.
		return reply, false
	case req.Op == wire.OpIdleBeat:
		reply.Busy = a.RunsJob(req.JobID)
	case req.Op == wire.OpRunActive:
		reply.Busy = a.RunActive(req.JobID, req.Lock, req.RunID)
	}
	return reply, true
}

// Stopping makes the server answer run_active alone from now on: the
// worker has stopped taking triggers. A nil Server does nothing.
func (s *Server) Stopping() {
	if s != nil {
		s.stopping.Store(true)
	}
}

// Stop ends the answers. A nil Server (Serve failed) does nothing.
func (s *Server) Stop() {
	if s == nil {
		return
	}
	_ = s.sub.Unsubscribe()
}
