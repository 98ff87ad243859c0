package questions

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/testnats"
)

// answer makes nc answer subject in the schedulers' queue group with what
// reply returns for each request.
func answer(t *testing.T, nc *nats.Conn, subject string, reply func(data []byte) any) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	sub, err := nc.QueueSubscribe(subject, stream.SupersedeQueue, func(m *nats.Msg) {
		n.Add(1)
		data, err := wire.EncodeControl(reply(m.Data))
		if err == nil {
			err = m.Respond(data)
		}
		if err != nil {
			t.Errorf("not answered: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return &n
}

func run(t *testing.T, a *Asker) {
	ctx, cancel := context.WithCancel(context.Background())
	go a.Run(ctx)
	t.Cleanup(func() { cancel(); <-a.Done() })
}

// The start check gets each run's answer; an answer with an error is an
// error, never a guess.
func TestStarted(t *testing.T) {
	e := testnats.New(t)
	fail := atomic.Bool{}
	answer(t, e.Connect(), stream.StartCheck, func(data []byte) any {
		var req wire.StartRequest
		var reply wire.StartReply
		if err := wire.DecodeControl(data, &req); err != nil {
			reply.Error = err.Error()
		}
		if fail.Load() {
			reply.Error = "database down"
			return &reply
		}
		for _, q := range req.Queries {
			rs := wire.RunStart{Status: wire.StatusTriggered}
			if q.RunID == 2 {
				rs = wire.RunStart{Status: wire.StatusRunning, WorkerID: "w9", StartedAt: time.Unix(1000, 0).UTC()}
			}
			reply.Runs = append(reply.Runs, rs)
		}
		return &reply
	})
	a := New(e.Connect(), zaptest.NewLogger(t))
	run(t, a)
	at := time.Unix(900, 0).UTC()
	if rs, err := a.Started(wire.StartQuery{RunID: 1, ScheduledAt: at}); err != nil || rs.Started() {
		t.Errorf("run 1: %+v, %v; want not started", rs, err)
	}
	if rs, err := a.Started(wire.StartQuery{RunID: 2, ScheduledAt: at}); err != nil || !rs.Started() || rs.WorkerID != "w9" {
		t.Errorf("run 2: %+v, %v; want started on w9", rs, err)
	}
	fail.Store(true)
	if _, err := a.Started(wire.StartQuery{RunID: 1, ScheduledAt: at}); err == nil {
		t.Error("an answer with an error was taken at its word")
	}
}

// A late fire_once trigger learns the newer run that supersedes it; with
// no scheduler to answer, it is not answered (and runs).
func TestSuperseded(t *testing.T) {
	e := testnats.New(t)
	a := New(e.Connect(), zaptest.NewLogger(t))
	run(t, a)
	q := wire.SupersedeQuery{RunID: 1, JobID: 7, ScheduledAt: time.Unix(900, 0).UTC(), Cutoff: time.Unix(950, 0).UTC()}
	if by, answered := a.Superseded(q); answered || by != 0 {
		t.Errorf("no scheduler: %d, %v; want no answer", by, answered)
	}
	answer(t, e.Connect(), stream.Supersede, func(data []byte) any {
		var req wire.SupersedeRequest
		reply := wire.SupersedeReply{}
		if err := wire.DecodeControl(data, &req); err != nil {
			reply.Error = err.Error()
		}
		for _, q := range req.Queries {
			reply.By = append(reply.By, q.RunID+4)
		}
		return &reply
	})
	if by, answered := a.Superseded(q); !answered || by != 5 {
		t.Errorf("superseded: %d, %v; want run 5", by, answered)
	}
}

// Once stopped, questions get no answer.
func TestStopped(t *testing.T) {
	e := testnats.New(t)
	a := New(e.Connect(), zaptest.NewLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a.Run(ctx)
	if _, err := a.Started(wire.StartQuery{RunID: 1, ScheduledAt: time.Unix(900, 0)}); !errors.Is(err, ErrStopped) {
		t.Errorf("start check after the stop: %v, want ErrStopped", err)
	}
	if _, answered := a.Superseded(wire.SupersedeQuery{RunID: 1, JobID: 7}); answered {
		t.Error("supersede question after the stop answered")
	}
}
