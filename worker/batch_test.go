package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/wire"
)

// publishBatch publishes ts as one trigger batch of testGroup, with the
// schedulers' message id, and returns its stream sequence.
func (e *env) publishBatch(ts ...*wire.Trigger) uint64 {
	e.t.Helper()
	data, err := wire.EncodeTriggerBatch(ts)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.publishBatchRaw(data, wire.BatchMsgID(ts[0].RunID))
}

// publishBatchRaw publishes data on testGroup's batch subject.
func (e *env) publishBatchRaw(data []byte, msgID string) uint64 {
	e.t.Helper()
	return e.publishSigned(stream.TriggerBatch(testGroup), testGroup, true, data, msgID)
}

// batchConsumer returns the info of the group's batch consumer.
func (e *env) batchConsumer() *jetstream.ConsumerInfo {
	e.t.Helper()
	return e.consumer(stream.BatchConsumer(testGroup))
}

// execLog records the handler executions of a test: run id → Jobs seen,
// in order.
type execLog struct {
	mu   sync.Mutex
	jobs map[int64][]Job
}

func (x *execLog) add(job *Job) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.jobs == nil {
		x.jobs = make(map[int64][]Job)
	}
	x.jobs[job.RunID] = append(x.jobs[job.RunID], *job)
}

func (x *execLog) get(run int64) []Job {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]Job(nil), x.jobs[run]...)
}

// Every run of a batch runs once with its own trigger and is reported like
// a run that came alone (started, then finished, naming the batch's place
// in the stream), and the batch is acknowledged: removed from the stream,
// never redelivered.
func TestBatchRunsEveryRunOnce(t *testing.T) {
	e := newEnv(t)
	ev := e.events()
	var execs execLog
	r := e.start(Config{Concurrency: 8}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error { execs.add(job); return nil })
	})
	ids := []int64{1, 2, 3, 4, 5}
	var ts []*wire.Trigger
	for _, id := range ids {
		ts = append(ts, trigger(id, "h", fmt.Sprintf("params of %d", id)))
	}
	seq := e.publishBatch(ts...)
	fin := ev.waitFinished(ids...)
	testwait.Eventually(t, waitLimit, "the batch to be acknowledged", func() bool { return e.triggersLeft() == 0 })
	ev.expectNone(2 * testFetchWait)

	for _, id := range ids {
		jobs := execs.get(id)
		if len(jobs) != 1 {
			t.Errorf("run %d executed %d times, want once", id, len(jobs))
			continue
		}
		if want := fmt.Sprintf("params of %d", id); jobs[0].Params != want || jobs[0].JobID != 1000+id || jobs[0].Delivery != 1 {
			t.Errorf("run %d saw %+v, want its own trigger (params %q, job %d) on delivery 1", id, jobs[0], want, 1000+id)
		}
		got := ev.run(id)
		if len(got) != 2 || got[0].Kind != wire.EventStarted || fin[id].Status != wire.StatusSucceeded {
			t.Errorf("run %d events %+v, want started and SUCCEEDED", id, got)
		}
		if fin[id].TriggerSeq != seq {
			t.Errorf("run %d reported trigger seq %d, want the batch's %d", id, fin[id].TriggerSeq, seq)
		}
	}
	if info := e.batchConsumer(); info.NumAckPending != 0 || info.NumRedelivered != 0 || info.Delivered.Consumer != 1 {
		t.Errorf("batch consumer: %d unacknowledged, %d redelivered, %d deliveries; want 0, 0, 1",
			info.NumAckPending, info.NumRedelivered, info.Delivered.Consumer)
	}
	const g = `group="g"`
	want := map[string]float64{
		`jetjob_worker_slots{` + g + `,lane="batch"}`:                  8,
		`jetjob_worker_slots_busy{` + g + `,lane="batch"}`:             0,
		`jetjob_worker_trigger_pickup_seconds{` + g + `,lane="batch"}`: 5, // one per run
	}
	var got map[string]float64
	if !testwait.Poll(waitLimit, func() bool {
		got = series(t, r.w.Collector())
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return true
	}) {
		for k, v := range want {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// Concurrency bounds the runs of a batch as it bounds single triggers:
// a batch larger than the free slots runs its members as slots free up,
// never more at once.
func TestBatchRespectsConcurrency(t *testing.T) {
	e := newEnv(t)
	ev := e.events()
	const limit, n = 2, 6
	var g gauge
	release := make(chan struct{})
	e.start(Config{Concurrency: limit}, func(w *Worker) {
		w.Handle("h", g.blocking(release))
	})
	ids := make([]int64, n)
	var ts []*wire.Trigger
	for i := range ids {
		ids[i] = int64(i + 1)
		ts = append(ts, trigger(ids[i], "h", ""))
	}
	e.publishBatch(ts...)
	g.releaseOneByOne(t, release, limit, n)
	fin := ev.waitFinished(ids...)
	for _, id := range ids {
		if fin[id].Status != wire.StatusSucceeded {
			t.Errorf("run %d: %+v", id, fin[id])
		}
	}
	testwait.Eventually(t, waitLimit, "the batch to be acknowledged", func() bool { return e.triggersLeft() == 0 })
	if p := g.peak.Load(); p != limit {
		t.Errorf("peak concurrency %d, want %d", p, limit)
	}
}

// An invalid line spoils only its own run: that run is reported FAILED, the
// others run, and the batch is acknowledged, not terminated and not
// redelivered. A message that is no batch at all is terminated.
func TestBatchInvalidMember(t *testing.T) {
	e := newEnv(t)
	ev := e.events()
	terminated := make(chan jsTerminated, 4)
	sub, err := e.nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED."+stream.Triggers+"."+stream.BatchConsumer(testGroup),
		func(m *nats.Msg) {
			var adv jsTerminated
			if err := json.Unmarshal(m.Data, &adv); err != nil {
				t.Errorf("advisory %s: %v", m.Data, err)
			}
			terminated <- adv
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	var execs execLog
	e.start(Config{}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error { execs.add(job); return nil })
	})
	var lines [][]byte
	for _, id := range []int64{1, 2, 3} {
		data, err := wire.EncodeTrigger(trigger(id, "h", ""))
		if err != nil {
			t.Fatal(err)
		}
		if id == 2 { // readable ids, an unknown trigger type
			data = bytes.Replace(data, []byte(`"trigger_type":"manual"`), []byte(`"trigger_type":"bogus"`), 1)
		}
		lines = append(lines, data)
	}
	e.publishBatchRaw(bytes.Join(lines, []byte("\n")), wire.BatchMsgID(1))
	fin := ev.waitFinished(1, 2, 3)
	testwait.Eventually(t, waitLimit, "the batch to leave the stream", func() bool { return e.triggersLeft() == 0 })
	if fin[2].Status != wire.StatusFailed || len(ev.run(2)) != 1 {
		t.Errorf("invalid run 2: events %+v, want FAILED only", ev.run(2))
	}
	for _, id := range []int64{1, 3} {
		if fin[id].Status != wire.StatusSucceeded || len(execs.get(id)) != 1 {
			t.Errorf("run %d: %+v after %d executions, want SUCCEEDED once", id, fin[id], len(execs.get(id)))
		}
	}
	if n := len(execs.get(2)); n != 0 {
		t.Errorf("invalid run 2 executed %d times", n)
	}

	// A message that is no batch: terminated. The server sends its
	// advisories in order, so the first one to arrive tells whether the
	// batch above was terminated too.
	bad := e.publishBatchRaw([]byte(" \n "), "not-a-batch")
	adv := recv(t, "the terminated advisory", terminated)
	if adv.StreamSeq != bad || adv.Reason != "invalid trigger batch" {
		t.Errorf("terminated: %+v, want the malformed message %d only, reason %q", adv, bad, "invalid trigger batch")
	}
	testwait.Eventually(t, waitLimit, "the malformed batch to leave the stream", func() bool { return e.triggersLeft() == 0 })
	if info := e.batchConsumer(); info.NumRedelivered != 0 || info.NumAckPending != 0 {
		t.Errorf("batch consumer: %d redelivered, %d unacknowledged; want none", info.NumRedelivered, info.NumAckPending)
	}
	ev.expectNone(2 * testFetchWait)
}

// jsTerminated is the part of the server's MSG_TERMINATED advisory the
// tests read.
type jsTerminated struct {
	StreamSeq uint64 `json:"stream_seq"`
	Reason    string `json:"reason"`
}

// A worker that stops while runs of a batch wait for a slot hands the batch
// back once its running run is done; the next worker runs only the runs
// that had not run, learning from the start check that the other ended.
func TestBatchStopHandsBackWaitingRuns(t *testing.T) {
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
	obsCore, observed := observer.New(zap.WarnLevel)
	started := make(chan struct{}, 1)
	gate := make(chan struct{})
	e.start(Config{ID: "w", Concurrency: 4, Logger: zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), obsCore))},
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

// A trigger batch on this worker's directed subject (the runs of jobs
// routed consistent_hash) runs like one on the batch lane: every run once,
// more runs than slots waiting for one, never more at once than the
// directed lane's Concurrency, and the message acknowledged once. Lone
// triggers that arrive on the same lane behind it wait for a slot too. The
// heartbeat says the worker reads such batches, which is what makes the
// schedulers send them.
func TestDirectedBatchRunsOnItsWorker(t *testing.T) {
	e := newEnv(t)
	ev := e.events()
	const limit, n, lone = 2, 5, 2
	var g gauge
	release := make(chan struct{})
	var execs execLog
	ids := make([]int64, n)
	var ts []*wire.Trigger
	for i := range ids {
		ids[i] = int64(i + 1)
		ts = append(ts, trigger(ids[i], "h", ""))
	}
	data, err := wire.EncodeTriggerBatch(ts)
	if err != nil {
		t.Fatal(err)
	}
	// Published before the worker starts, so that its first pull request
	// (two slots) gets the batch and a lone trigger together.
	msg := e.signed(stream.TriggerWorker(testGroup, "w1"), testGroup, true, data)
	msg.Header.Set(stream.BatchHeader, "1")
	if _, err := e.js.PublishMsg(e.ctx(), msg, jetstream.WithMsgID(wire.BatchMsgID(1))); err != nil {
		t.Fatal(err)
	}
	for id := int64(n + 1); id <= n+lone; id++ {
		ids = append(ids, id)
		tr := trigger(id, "h", "")
		data, err := wire.EncodeTrigger(tr)
		if err != nil {
			t.Fatal(err)
		}
		e.publishSigned(stream.TriggerWorker(testGroup, "w1"), testGroup, false, data, wire.MsgID(id))
	}
	e.start(Config{ID: "w1", Concurrency: limit, HeartbeatInterval: testBeat}, func(w *Worker) {
		block := g.blocking(release)
		w.Handle("h", func(ctx context.Context, job *Job) error { execs.add(job); return block(ctx, job) })
	})
	hb := waitHeartbeat(t, e.workersKV(), "w1", "the first heartbeat", func(*wire.WorkerInfo) bool { return true })
	if !hb.DirectedBatches {
		t.Fatalf("heartbeat %+v does not say the worker reads directed batches", hb)
	}
	g.releaseOneByOne(t, release, limit, n+lone)
	fin := ev.waitFinished(ids...)
	for _, id := range ids {
		if fin[id].Status != wire.StatusSucceeded || len(execs.get(id)) != 1 {
			t.Errorf("run %d: %+v, executed %d times; want SUCCEEDED once", id, fin[id], len(execs.get(id)))
		}
	}
	testwait.Eventually(t, waitLimit, "the batch to be acknowledged", func() bool { return e.triggersLeft() == 0 })
	if info := e.consumer(stream.WorkerConsumer(testGroup, "w1")); info.NumAckPending != 0 || info.NumRedelivered != 0 {
		t.Errorf("directed consumer: %d unacknowledged, %d redelivered; want 0, 0", info.NumAckPending, info.NumRedelivered)
	}
}
