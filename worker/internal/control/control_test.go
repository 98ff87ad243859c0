package control

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/testnats"
)

// answers is a worker with run 10 of job 1 executing and holding lock
// job.2_part1 under run 20's name.
type answers struct{}

func (answers) RunsJob(job int64) bool { return job == 1 }

func (answers) RunActive(job int64, lock string, run int64) bool {
	return run == 10 || (lock == "job.2_part1" && run == 20)
}

func ask(t *testing.T, nc *nats.Conn, req wire.ControlRequest) (wire.ControlReply, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), AskTimeout)
	defer cancel()
	return stream.Ask(ctx, nc, "w1", req)
}

// serve starts a server on a connection of its own, its subscription
// known to the NATS server before a question is asked.
func serve(t *testing.T, e *testnats.Env) *Server {
	t.Helper()
	nc := e.Connect()
	s, err := Serve(nc, "w1", answers{}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return s
}

// Each op is answered from the worker's answers, under its own id; a
// stopping worker answers run_active alone, and a stopped one nothing.
func TestServe(t *testing.T) {
	e := testnats.New(t)
	s := serve(t, e)
	defer s.Stop()
	for _, c := range []struct {
		name string
		req  wire.ControlRequest
		busy bool
	}{
		{"ping", wire.ControlRequest{Op: wire.OpPing}, false},
		{"idle beat, job running", wire.ControlRequest{Op: wire.OpIdleBeat, JobID: 1}, true},
		{"idle beat, job idle", wire.ControlRequest{Op: wire.OpIdleBeat, JobID: 3}, false},
		{"run active", wire.ControlRequest{Op: wire.OpRunActive, JobID: 1, RunID: 10}, true},
		{"run ended", wire.ControlRequest{Op: wire.OpRunActive, JobID: 1, RunID: 11}, false},
		{"run named by a part's lock", wire.ControlRequest{Op: wire.OpRunActive, JobID: 2, RunID: 20, Lock: "job.2_part1"}, true},
	} {
		reply, err := ask(t, e.NC, c.req)
		if err != nil || reply.Busy != c.busy || reply.WorkerID != "w1" {
			t.Errorf("%s: %+v, %v; want busy %v from w1", c.name, reply, err, c.busy)
		}
	}

	s.Stopping()
	if _, err := ask(t, e.NC, wire.ControlRequest{Op: wire.OpPing}); err == nil {
		t.Error("a stopping worker answered ping")
	}
	if reply, err := ask(t, e.NC, wire.ControlRequest{Op: wire.OpRunActive, JobID: 1, RunID: 10}); err != nil || !reply.Busy {
		t.Errorf("a stopping worker asked run_active: %+v, %v; want busy", reply, err)
	}

	s.Stop()
	if reply, err := ask(t, e.NC, wire.ControlRequest{Op: wire.OpRunActive, JobID: 1, RunID: 10}); err == nil {
		t.Errorf("a stopped worker answered: %+v", reply)
	}
}

// A request that cannot be decoded gets an answer naming the error.
func TestMalformedRequest(t *testing.T) {
	e := testnats.New(t)
	s := serve(t, e)
	defer s.Stop()
	msg, err := e.NC.Request(stream.Control("w1"), []byte(`{"v":1,"op":"dance"}`), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var reply wire.ControlReply
	if err := wire.DecodeControl(msg.Data, &reply); err != nil || reply.Error == "" || reply.WorkerID != "w1" {
		t.Errorf("answer to a malformed request: %s (%v), want an error from w1", msg.Data, err)
	}
}

// A nil Server (Serve failed) can be told to stop.
func TestNilServer(t *testing.T) {
	var s *Server
	s.Stopping()
	s.Stop()
}
