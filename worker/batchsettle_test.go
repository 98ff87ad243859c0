package worker

// How a trigger batch's delivered message is settled: handed back when a
// stopping worker leaves runs of it unstarted, redelivered to the worker
// that ran part of it, and settled once after its last run (batch.go).

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/wire"
)

// A worker that stops while runs of a batch wait for a slot hands the batch
// back once its running run is done; the next worker runs only the runs
// that had not run, learning from the start check that the other ended.
func TestBatchStopHandsBackWaitingRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	// The schedulers' answer, from the events the test saw: what is known
	// finished is over, the rest never started.
	var mu sync.Mutex
	known := map[int64]wire.Event{}
	e.answerStartChecks(func(q wire.StartQuery) wire.RunStart {
		mu.Lock()
		defer mu.Unlock()
		if f, ok := known[q.RunID]; ok {
			return wire.RunStart{Status: f.Status, WorkerID: f.WorkerID, StartedAt: f.At}
		}
		return wire.RunStart{Status: wire.StatusTriggered}
	})
	var onA, onB execLog
	holding := make(chan struct{}, 1)
	release := make(chan struct{})
	a := e.start(Config{ID: "a", Concurrency: 1, ShutdownGrace: waitLimit}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			onA.add(job)
			holding <- struct{}{}
			<-release
			return nil
		})
	})
	e.publishBatch(trigger(1, "h", ""), trigger(2, "h", ""), trigger(3, "h", ""))
	recv(t, "run 1 to hold a's only slot", holding)

	stopped := a.beginStop()
	close(release)
	if err := recv(t, "a to stop", stopped); err != nil {
		t.Fatal(err)
	}
	fin := ev.waitFinished(1)
	mu.Lock()
	known[1] = fin[1]
	mu.Unlock()

	e.start(Config{ID: "b"}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error { onB.add(job); return nil })
	})
	fin = ev.waitFinished(1, 2, 3)
	testwait.Eventually(t, waitLimit, "the batch to be acknowledged", func() bool { return e.triggersLeft() == 0 })
	ev.expectNone(2 * testFetchWait)

	if got := onA.get(1); len(got) != 1 || len(onB.get(1)) != 0 {
		t.Errorf("run 1 ran %d times on a and %d on b, want once on a", len(got), len(onB.get(1)))
	}
	if got := ev.run(1); len(got) != 2 || fin[1].WorkerID != "a" || fin[1].Status != wire.StatusSucceeded {
		t.Errorf("run 1 events %+v, want started and SUCCEEDED on a only", got)
	}
	for _, id := range []int64{2, 3} {
		if n := len(onA.get(id)); n != 0 {
			t.Errorf("run %d ran on a, which was stopping before it got a slot", id)
		}
		jobs := onB.get(id)
		if len(jobs) != 1 || jobs[0].Delivery != 2 {
			t.Errorf("run %d on b: %+v, want one execution on delivery 2", id, jobs)
		}
		if fin[id].WorkerID != "b" || fin[id].Status != wire.StatusSucceeded {
			t.Errorf("run %d finished %+v, want SUCCEEDED on b", id, fin[id])
		}
	}
}

// A batch delivered again to the worker that ran some of its runs does not
// run those again: they are in its recent runs, and are acknowledged at
// once, while a run still executing here is joined.
func TestBatchRedeliveryToSameWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	// No start check may decide here: the worker knows its runs. Were one
	// asked, the answer (started here, no longer running) would end the
	// run LOST, which the events would show.
	var execs execLog
	e.answerStartChecks(func(q wire.StartQuery) wire.RunStart {
		if len(execs.get(q.RunID)) > 0 {
			return wire.RunStart{Status: wire.StatusRunning, WorkerID: "w", StartedAt: time.Now()}
		}
		return wire.RunStart{Status: wire.StatusTriggered}
	})
	logger, observed := observedLogger(t, zap.WarnLevel)
	started := make(chan struct{}, 1)
	gate := make(chan struct{})
	e.start(Config{ID: "w", Concurrency: 4, Logger: logger},
		func(w *Worker) {
			w.Handle("h", func(ctx context.Context, job *Job) error {
				execs.add(job)
				if job.Params == "block" {
					started <- struct{}{}
					<-gate
				}
				return nil
			})
		})
	e.publishBatch(trigger(1, "h", ""), trigger(2, "h", "block"))
	recv(t, "run 2 to start", started)
	ev.waitFinished(1)

	// The worker keeps sending in-progress acks every 10s (AckWait 30s / 3);
	// the server now redelivers the batch after 500ms.
	cfg := e.batchConsumer().Config
	cfg.AckWait = 500 * time.Millisecond
	if _, err := e.js.CreateOrUpdateConsumer(e.ctx(), stream.Triggers, cfg); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, waitLimit, "the redelivery of finished run 1 to be acknowledged without running", func() bool {
		return observed.FilterMessageSnippet("after its run finished here").Len() >= 1
	})
	close(gate)
	fin := ev.waitFinished(1, 2)
	testwait.Eventually(t, waitLimit, "the batch to be acknowledged", func() bool { return e.triggersLeft() == 0 })
	ev.expectNone(2 * testFetchWait)
	for _, id := range []int64{1, 2} {
		if n := len(execs.get(id)); n != 1 {
			t.Errorf("run %d executed %d times, want once", id, n)
		}
		if got := ev.run(id); len(got) != 2 || fin[id].Status != wire.StatusSucceeded {
			t.Errorf("run %d events %+v, want one started and one SUCCEEDED", id, got)
		}
	}
	if observed.FilterMessageSnippet("joined, not started twice").Len() == 0 {
		t.Errorf("the redelivery of running run 2 did not join its execution")
	}
}

// fetchBatch delivers the next message of the group's batch consumer,
// which the test creates as a worker would.
func (e *env) fetchBatch() jetstream.Msg {
	e.t.Helper()
	c, err := e.js.CreateOrUpdateConsumer(e.ctx(), stream.Triggers, jetstream.ConsumerConfig{
		Durable: stream.BatchConsumer(testGroup), FilterSubject: stream.TriggerBatch(testGroup),
		AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	msg, err := c.Next(jetstream.FetchMaxWait(waitLimit))
	if err != nil {
		e.t.Fatal(err)
	}
	return msg
}

// The delivered batch is settled once, when its last run settles: acked
// when every run ended here (a terminated, invalid one included), handed
// back when one was. A run's failed ack is retried by the run's retry, as
// a message's would be, and a settled run reports itself already acked,
// which the run path takes as done: the batch is never left unacknowledged
// for the ack wait, nor rerun, because of an ack that failed once.
func TestBatchSettlesOnceAfterItsLastRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w, err := New(Config{NATS: e.nc, Group: testGroup, Logger: zaptest.NewLogger(t), TriggerKeys: e.keys})
	if err != nil {
		t.Fatal(err)
	}
	ctx := e.ctx()
	pending := func() int { return e.batchConsumer().NumAckPending }
	members := func(msg jetstream.Msg) []*batchMember {
		lines, err := wire.SplitTriggerBatch(msg.Data())
		if err != nil {
			t.Fatal(err)
		}
		return w.newBatch(msg, 0, lines)
	}

	e.publishBatch(trigger(1, "h", ""), trigger(2, "h", ""), trigger(3, "h", ""))
	ms := members(e.fetchBatch())
	if tr, err := wire.DecodeTrigger(ms[1].Data()); err != nil || tr.RunID != 2 {
		t.Fatalf("member 2 reads run %v (%v)", tr, err)
	}
	if err := ms[0].DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ms[0].DoubleAck(ctx); !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		t.Errorf("second ack of a settled run: %v, want ErrMsgAlreadyAckd", err)
	}
	if err := w.ackMsg(ms[0]); err != nil {
		t.Errorf("the run path's ack of a settled run: %v, want done", err)
	}
	if err := ms[1].TermWithReason("invalid trigger"); err != nil {
		t.Fatal(err)
	}
	if n := pending(); n != 1 {
		t.Fatalf("%d unacknowledged with a run still going, want the batch held", n)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := ms[2].DoubleAck(cancelled); err == nil {
		t.Fatal("the last run's ack with a cancelled context succeeded")
	}
	if n := pending(); n != 1 {
		t.Fatalf("%d unacknowledged after a failed ack, want 1", n)
	}
	if err := ms[2].DoubleAck(ctx); err != nil {
		t.Fatalf("retried ack: %v", err)
	}
	if n, left := pending(), e.triggersLeft(); n != 0 || left != 0 {
		t.Fatalf("after the retried ack: %d unacknowledged, %d in the stream; want the batch acknowledged", n, left)
	}
	if err := ms[2].InProgress(); !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		t.Errorf("in-progress ack of a settled run: %v, want ErrMsgAlreadyAckd", err)
	}

	// One run handed back: the batch comes back, for every run.
	e.publishBatch(trigger(4, "h", ""), trigger(5, "h", ""))
	ms = members(e.fetchBatch())
	if err := ms[0].NakWithDelay(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := ms[1].DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	again := e.fetchBatch()
	md, err := again.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if md.NumDelivered != 2 || !bytes.Contains(again.Data(), []byte(`"run_id":5`)) {
		t.Errorf("redelivered: delivery %d, data %s; want the whole batch on delivery 2", md.NumDelivered, again.Data())
	}
	ms = members(again)
	if md, _ := ms[1].Metadata(); md == nil || md.NumDelivered != 2 {
		t.Errorf("a run of the redelivered batch sees metadata %+v, want delivery 2", md)
	}
	for _, m := range ms { // and its keep-alive ends
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers left, want the batch acknowledged", left)
	}
}
