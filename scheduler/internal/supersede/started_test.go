package supersede

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/shared/wire"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// A start check sees a run's start while its started event still waits in
// JETJOB_EVENTS, unapplied: taken by a results applier that has not
// acknowledged it (a scheduler stopping mid-batch), or taken by none. It
// does not wait for the stream to drain, and a run with no event anywhere
// has not started.
func TestStartCheckReadsUnappliedEvents(t *testing.T) {
	ctx, js, pool := startCheckSetup(t)

	at := time.Now().UTC().Truncate(time.Millisecond)
	// Runs 1 and 3 of group g (only events of a run's own group count:
	// foreign_test.go); run 2 exists nowhere.
	run1, run3 := insertRun(t, pool, 1, "g", at), insertRun(t, pool, 3, "g", at)
	run2 := run3 + 1000
	publish := func(evs ...wire.Event) {
		t.Helper()
		data, err := wire.EncodeEvents(evs...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, stream.Event("g"), data); err != nil {
			t.Fatal(err)
		}
	}
	startEv := func(run int64, worker string) wire.Event {
		return wire.Event{Kind: wire.EventStarted, RunID: run, JobID: 1, WorkerID: worker, Status: wire.StatusRunning, At: at, ScheduledAt: at}
	}
	// Run 1 started on a; its event is taken by an applier that never
	// acknowledges it. Run 3 started and succeeded; nobody took its event.
	publish(startEv(run1, "a"))
	applier, err := js.CreateOrUpdateConsumer(ctx, stream.Events, jetstream.ConsumerConfig{
		Durable: stream.EventsConsumer, FilterSubject: "jetjob.event.>", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	taken, err := applier.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range taken.Messages() {
	}
	done := startEv(run3, "b")
	done.Kind, done.Status = wire.EventFinished, wire.StatusSucceeded
	publish(startEv(run3, "b"), done)

	begin := time.Now()
	got, err := started(ctx, js, pool, []wire.StartQuery{{RunID: run1, ScheduledAt: at}, {RunID: run2, ScheduledAt: at}, {RunID: run3, ScheduledAt: at}}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > startedTimeout {
		t.Errorf("answered after %s: it waited for the stream to drain", took)
	}
	if r := got[0]; !r.Started() || r.WorkerID != "a" || !r.StartedAt.Equal(at) || r.Status != wire.StatusRunning {
		t.Errorf("run 1: %+v, want started on a at %s (its event is taken, not acknowledged)", r, at)
	}
	if r := got[1]; r.Started() || r.Status != "" {
		t.Errorf("run 2: %+v, want not started", r)
	}
	if r := got[2]; r.Status != wire.StatusSucceeded || r.WorkerID != "b" {
		t.Errorf("run 3: %+v, want SUCCEEDED, started on b", r)
	}
}
