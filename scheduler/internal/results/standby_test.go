package results

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/shared/wire"
)

// applierRig runs appliers on one embedded NATS and one PostgreSQL
// database, and publishes events messages (about runs that do not exist:
// each is applied, changes nothing, and is acknowledged).
type applierRig struct {
	t    *testing.T
	js   jetstream.JetStream
	deps Deps
	seq  atomic.Int64
}

func newApplierRig(t *testing.T) *applierRig {
	_, _, js := natsembed.StartTest(t)
	if err := stream.Provision(context.Background(), js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	return &applierRig{t: t, js: js, deps: Deps{JS: js, Pool: pgtest.Pool(t), Log: zaptest.NewLogger(t)}}
}

// start runs an applier whose Active reports active, looking at the
// consumer every look while it stands by, and returns its signals.
func (r *applierRig) start(active *atomic.Bool, look time.Duration) *TestSignals {
	deps := r.deps
	deps.Active = active.Load
	deps.TestSignals.Init(r.t)
	a, err := New(Config{}, deps)
	if err != nil {
		r.t.Fatal(err)
	}
	a.standbyCheck = look
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	r.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			r.t.Errorf("Run: %v", err)
		}
	})
	return &deps.TestSignals
}

// publish publishes n events messages of one event each.
func (r *applierRig) publish(n int) {
	for range n {
		id := r.seq.Add(1)
		now := time.Now().UTC()
		data, err := wire.EncodeEvents(wire.Event{Kind: wire.EventFinished, RunID: id, JobID: 1, WorkerID: "w",
			Status: wire.StatusSucceeded, At: now, ScheduledAt: now})
		if err != nil {
			r.t.Fatal(err)
		}
		if _, err := r.js.Publish(context.Background(), stream.Event("g"), data,
			jetstream.WithMsgID(fmt.Sprintf("standby-test-%d", id))); err != nil {
			r.t.Fatal(err)
		}
	}
}

// drained waits until every events message published was applied and
// acknowledged (the stream is a work queue: empty).
func (r *applierRig) drained(what string) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := r.js.Stream(context.Background(), stream.Events)
		if err != nil {
			r.t.Fatal(err)
		}
		info, err := s.Info(context.Background())
		if err != nil {
			r.t.Fatal(err)
		}
		if info.State.Msgs == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: %d events messages still in the stream after 20s", what, info.State.Msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// While the active applier keeps up, one standing by takes nothing: every
// event is applied by the active one.
func TestStandbyLeavesEventsToTheActiveApplier(t *testing.T) {
	r := newApplierRig(t)
	var yes, no atomic.Bool
	yes.Store(true)
	active := r.start(&yes, time.Second)
	standing := r.start(&no, 500*time.Millisecond)
	for range 5 {
		r.publish(20)
		r.drained("the active applier")
	}
	active.Applied.WaitOrTimeout(t, 5*time.Second) // it applied something
	standing.Applied.RequireEmpty(t)
}

// With no active applier (none holds shard 0, or it is gone), one standing
// by stands in and applies every event, and stands by again once it has
// caught up and one is active.
func TestStandbyStandsInWhenNoneIsActive(t *testing.T) {
	r := newApplierRig(t)
	var no atomic.Bool
	r.start(&no, 100*time.Millisecond)
	r.publish(50)
	r.drained("the applier standing in")
}
