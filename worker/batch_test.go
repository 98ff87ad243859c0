package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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
	t.Parallel()
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
	r.waitProcessed(ids...)
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers left once every run was processed, want the batch acknowledged", left)
	}
	fin := ev.waitFinished(ids...)
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
	wantSeries(t, r.w.metrics, want)
}

// Concurrency bounds the runs of a batch as it bounds single triggers:
// a batch larger than the free slots runs its members as slots free up,
// never more at once.
func TestBatchRespectsConcurrency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	const limit, n = 2, 6
	var g gauge
	release := make(chan struct{})
	r := e.start(Config{Concurrency: limit}, func(w *Worker) {
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
	r.waitProcessed(ids...)
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers left once every run was processed, want the batch acknowledged", left)
	}
	wantSucceeded(t, ev.waitFinished(ids...))
	if p := g.peak.Load(); p != limit {
		t.Errorf("peak concurrency %d, want %d", p, limit)
	}
}

// An invalid line spoils only its own run: that run is reported FAILED, the
// others run, and the batch is acknowledged, not terminated and not
// redelivered. A message that is no batch at all is terminated.
func TestBatchInvalidMember(t *testing.T) {
	t.Parallel()
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
	r := e.start(Config{}, func(w *Worker) {
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
	r.waitProcessed(1, 2, 3)
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers left once every run was processed, want the batch acknowledged", left)
	}
	fin := ev.waitFinished(1, 2, 3)
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

// A trigger batch on this worker's directed subject (the runs of jobs
// routed consistent_hash) runs like one on the batch lane: every run once,
// more runs than slots waiting for one, never more at once than the
// directed lane's Concurrency, and the message acknowledged once. Lone
// triggers that arrive on the same lane behind it wait for a slot too. The
// heartbeat says the worker reads such batches, which is what makes the
// schedulers send them.
func TestDirectedBatchRunsOnItsWorker(t *testing.T) {
	t.Parallel()
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
	r := e.start(Config{ID: "w1", Concurrency: limit, HeartbeatInterval: testBeat}, func(w *Worker) {
		block := g.blocking(release)
		w.Handle("h", func(ctx context.Context, job *Job) error { execs.add(job); return block(ctx, job) })
	})
	hb := waitHeartbeat(t, e.workersKV(), "w1", "the first heartbeat", func(*wire.WorkerInfo) bool { return true })
	if !hb.DirectedBatches {
		t.Fatalf("heartbeat %+v does not say the worker reads directed batches", hb)
	}
	g.releaseOneByOne(t, release, limit, n+lone)
	r.waitProcessed(ids...)
	fin := ev.waitFinished(ids...)
	for _, id := range ids {
		if fin[id].Status != wire.StatusSucceeded || len(execs.get(id)) != 1 {
			t.Errorf("run %d: %+v, executed %d times; want SUCCEEDED once", id, fin[id], len(execs.get(id)))
		}
	}
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers left once every run was processed, want the batch and the lone triggers acknowledged", left)
	}
	if info := e.consumer(stream.WorkerConsumer(testGroup, "w1")); info.NumAckPending != 0 || info.NumRedelivered != 0 {
		t.Errorf("directed consumer: %d unacknowledged, %d redelivered; want 0, 0", info.NumAckPending, info.NumRedelivered)
	}
}
