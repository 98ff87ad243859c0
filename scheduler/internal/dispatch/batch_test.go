package dispatch

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/runtrace"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/spans"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// batchEnv is a real PostgreSQL (group "g", shard 0 held by "me" at
// epoch 1) and a real JetStream with jetjob's streams.
type batchEnv struct {
	t    *testing.T
	ctx  context.Context
	pool *pgxpool.Pool
	st   *store.Store
	js   jetstream.JetStream
	trig jetstream.Stream
}

func newBatchEnv(t *testing.T) *batchEnv {
	t.Helper()
	_, _, js := natsembed.StartTest(t)
	return newBatchEnvOn(t, js)
}

// newBatchEnvOn is newBatchEnv on the JetStream of a server of the test's
// own.
func newBatchEnvOn(t *testing.T, js jetstream.JetStream) *batchEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	pool, st := pgtest.Store(t)
	pgtest.HoldShard(t, pool, "me", 1)
	if err := stream.Provision(ctx, js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	trig, err := js.Stream(ctx, stream.Triggers)
	if err != nil {
		t.Fatal(err)
	}
	return &batchEnv{t: t, ctx: ctx, pool: pool, st: st, js: js, trig: trig}
}

// job creates a disabled job of group g with misfire policy mp.
func (e *batchEnv) job(name, mp string) int64 {
	e.t.Helper()
	return pgtest.Job(e.t, e.st, name, mp)
}

// insert writes fires as the planner does, under epoch 1, and returns
// what was written.
func (e *batchEnv) insert(fires ...runs.Fire) []runs.Inserted {
	e.t.Helper()
	return pgtest.Plan(e.t, e.pool, "me", 1, fires...)
}

// batchFires creates n jobs with misfire policy mp (j0, j1, …) and returns
// a fire of each at at, all in batch 1.
func (e *batchEnv) batchFires(n int, mp string, at time.Time) []runs.Fire {
	e.t.Helper()
	fires := make([]runs.Fire, n)
	for i := range fires {
		fires[i] = runs.Fire{JobID: e.job(fmt.Sprint("j", i), mp), Group: "g", TriggerType: wire.TriggerSchedule,
			Status: wire.StatusScheduled, ScheduledAt: at, Batch: 1}
	}
	return fires
}

// plan writes fires as the planner does and returns them as the wheel
// would hand them over: read back with their jobs, in (time, batch, id)
// order, under epoch 1.
func (e *batchEnv) plan(fires ...runs.Fire) []runs.Planned {
	e.t.Helper()
	e.insert(fires...)
	return e.load(false)
}

// load reads shard 0's SCHEDULED runs in the wheel's order, recovered or
// as planned.
func (e *batchEnv) load(recovered bool) []runs.Planned {
	e.t.Helper()
	rs, err := runs.LoadShard(e.ctx, e.pool, 0, time.Now().Add(time.Hour))
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range rs {
		rs[i].Epoch, rs[i].Recovered = 1, recovered
	}
	slices.SortFunc(rs, func(a, b runs.Planned) int {
		return cmp.Or(a.ScheduledAt.Compare(b.ScheduledAt), cmp.Compare(a.Batch, b.Batch), cmp.Compare(a.RunID, b.RunID))
	})
	return rs
}

// dispatcher runs a dispatcher until the returned stop; stop(true) ends it
// as a crash would, dropping what it has not written.
func (e *batchEnv) dispatcher(cfg Config, valid func(int, int64) bool) (*Dispatcher, func(crash bool)) {
	e.t.Helper()
	var ts TestSignals
	ts.Init(e.t)
	d, err := New(cfg, Deps{JS: e.js, Pool: e.pool, Owner: "me", Valid: valid, Log: zaptest.NewLogger(e.t), TestSignals: ts})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stopped := false
	stop := func(crash bool) {
		if stopped {
			return
		}
		stopped = true
		if crash {
			d.Abandon()
		}
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			e.t.Fatal("dispatcher did not stop")
		}
	}
	e.t.Cleanup(func() { stop(false) })
	return d, stop
}

// published is one trigger message in the stream.
type published struct {
	subject, msgID string
	seq            uint64
	runs           []int64
}

// messages reads every trigger message stored, in stream order.
func (e *batchEnv) messages() []published {
	e.t.Helper()
	var out []published
	for seq := uint64(1); ; seq++ {
		m, err := e.trig.GetMsg(e.ctx, seq, jetstream.WithGetMsgSubject("jetjob.trigger.>"))
		if err != nil {
			return out
		}
		seq = m.Sequence
		lines, err := wire.SplitTriggerBatch(m.Data)
		if err != nil {
			e.t.Fatalf("message %d: %v", seq, err)
		}
		p := published{subject: m.Subject, msgID: m.Header.Get(jetstream.MsgIDHeader), seq: seq}
		for _, l := range lines {
			tr, err := wire.DecodeTrigger(l)
			if err != nil {
				e.t.Fatalf("message %d holds an invalid trigger: %v", seq, err)
			}
			p.runs = append(p.runs, tr.RunID)
		}
		out = append(out, p)
	}
}

// status reads a run's status and stream sequence.
func (e *batchEnv) status(id int64) (wire.Status, uint64) {
	e.t.Helper()
	var st wire.Status
	var seq *int64
	if err := e.pool.QueryRow(e.ctx, `SELECT status, stream_seq FROM job_runs WHERE id = $1`, id).Scan(&st, &seq); err != nil {
		e.t.Fatal(err)
	}
	if seq == nil {
		return st, 0
	}
	return st, uint64(*seq)
}

// waitWritten waits until every run of ids reads want.
func (e *batchEnv) waitWritten(d *Dispatcher, want wire.Status, ids ...int64) {
	e.t.Helper()
	d.cfg.TestSignals.Flushed.WaitUntil(e.t, 30*time.Second, fmt.Sprintf("runs %v written %s", ids, want), func() bool {
		for _, id := range ids {
			if st, _ := e.status(id); st != want {
				return false
			}
		}
		return true
	})
}

func runIDs(rs []runs.Planned) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.RunID
	}
	return out
}

// A trigger batch is one message on its group's batch subject, under the
// batch's Msg-Id, holding all its runs in order; a run planned alone is
// published alone, as before. Every run of the batch is recorded
// TRIGGERED with the message's stream sequence.
func TestFirePublishesABatchAsOneMessage(t *testing.T) {
	e := newBatchEnv(t)
	at := time.Now().Add(-time.Second).Truncate(time.Microsecond)
	fires := e.batchFires(4, "fire_all", at)
	fires[3].Batch = 0 // alone
	due := e.plan(fires...)
	var members []runs.Planned
	var alone runs.Planned
	for _, r := range due {
		if r.Batch != 0 {
			members = append(members, r)
		} else {
			alone = r
		}
	}
	if len(members) != 3 || alone.RunID == 0 {
		t.Fatalf("planned %+v, want a batch of 3 and a run alone", due)
	}
	batch := members[0].Batch

	d, _ := e.dispatcher(Config{TriggeredDelay: -1}, nil)
	d.Fire(e.ctx, due)
	e.waitWritten(d, wire.StatusTriggered, runIDs(due)...)

	msgs := e.messages()
	if len(msgs) != 2 {
		t.Fatalf("%d trigger messages (%+v), want 2: the batch and the run alone", len(msgs), msgs)
	}
	var bm, am published
	for _, m := range msgs {
		if m.subject == stream.TriggerBatch("g") {
			bm = m
		} else {
			am = m
		}
	}
	if bm.msgID != wire.BatchMsgID(batch) || !slices.Equal(bm.runs, runIDs(members)) {
		t.Errorf("batch message %+v, want Msg-Id %s and runs %v in order", bm, wire.BatchMsgID(batch), runIDs(members))
	}
	if am.subject != stream.TriggerAny("g") || am.msgID != wire.MsgID(alone.RunID) || !slices.Equal(am.runs, []int64{alone.RunID}) {
		t.Errorf("lone message %+v, want run %d alone on the shared queue under its own Msg-Id", am, alone.RunID)
	}
	for _, r := range members {
		if st, seq := e.status(r.RunID); st != wire.StatusTriggered || seq != bm.seq {
			t.Errorf("run %d of the batch: %s with stream sequence %d, want TRIGGERED with the message's %d", r.RunID, st, seq, bm.seq)
		}
	}
	if _, seq := e.status(alone.RunID); seq != am.seq {
		t.Errorf("run %d alone: stream sequence %d, want %d", alone.RunID, seq, am.seq)
	}
}

// A batch a scheduler published and died before recording is published
// again by the shard's next owner (recovered from PostgreSQL, the same
// runs under the same Msg-Id): the stream drops the copy, so each run
// reaches a worker once, and the runs are recorded with the first
// message's sequence.
func TestARecoveredBatchIsADuplicate(t *testing.T) {
	e := newBatchEnv(t)
	at := time.Now().Add(-time.Second).Truncate(time.Microsecond)
	due := e.plan(e.batchFires(3, "skip", at)...)

	first, crash := e.dispatcher(Config{}, nil) // holds its TRIGGERED writes 2 s
	first.Fire(e.ctx, due)
	first.Drain(e.ctx)
	crash(true)
	msgs := e.messages()
	if len(msgs) != 1 || len(msgs[0].runs) != 3 {
		t.Fatalf("after the first publish: %+v, want one message of 3 runs", msgs)
	}
	for _, r := range due {
		if st, _ := e.status(r.RunID); st != wire.StatusScheduled {
			t.Fatalf("run %d is %s after the crash, want SCHEDULED (its write was held back)", r.RunID, st)
		}
	}

	recovered := e.load(true)
	if !slices.Equal(runIDs(recovered), runIDs(due)) || recovered[0].Batch != due[0].Batch {
		t.Fatalf("recovered %+v, want the batch's runs", recovered)
	}
	next, _ := e.dispatcher(Config{TriggeredDelay: -1}, nil)
	next.Fire(e.ctx, recovered)
	e.waitWritten(next, wire.StatusTriggered, runIDs(due)...)
	if again := e.messages(); len(again) != 1 {
		t.Fatalf("after the recovered publish: %+v, want the first message alone (the copy dropped)", again)
	}
	for _, r := range due {
		if _, seq := e.status(r.RunID); seq != msgs[0].seq {
			t.Errorf("run %d: stream sequence %d, want the first message's %d", r.RunID, seq, msgs[0].seq)
		}
	}
}

// A late batch is judged run by run: with every run's policy skipping
// it, all are SKIPPED and nothing is published; with one run's policy
// running it, the others are written SKIPPED before the message goes out
// without them, so that no later copy can hold a run the first lacked.
func TestALateBatchPublishesOnlyWhatRuns(t *testing.T) {
	e := newBatchEnv(t)
	at := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	fire := func(job int64, batch int, sec int) runs.Fire {
		return runs.Fire{JobID: job, Group: "g", TriggerType: wire.TriggerSchedule, Status: wire.StatusScheduled,
			ScheduledAt: at.Add(time.Duration(sec) * time.Second), Batch: batch}
	}
	skipA, skipB, all := e.job("skip-a", "skip"), e.job("skip-b", "skip"), e.job("all", "fire_all")
	due := e.plan(fire(skipA, 1, 0), fire(skipB, 1, 0), fire(skipA, 2, 1), fire(all, 2, 1))
	var skipped, ran []runs.Planned
	for _, r := range due {
		if r.JobID == all {
			ran = append(ran, r)
		} else {
			skipped = append(skipped, r)
		}
	}

	d, _ := e.dispatcher(Config{MisfireThreshold: 5 * time.Second, TriggeredDelay: -1}, nil)
	d.Fire(e.ctx, due)
	// The skipped run of the second batch was written before its
	// message was published; the first batch's by the flusher.
	e.waitWritten(d, wire.StatusTriggered, runIDs(ran)...)
	e.waitWritten(d, wire.StatusSkipped, runIDs(skipped)...)
	msgs := e.messages()
	if len(msgs) != 1 || !slices.Equal(msgs[0].runs, runIDs(ran)) || msgs[0].msgID != wire.BatchMsgID(ran[0].Batch) {
		t.Fatalf("published %+v, want one message of the second batch with only the fire_all run %v", msgs, runIDs(ran))
	}
}

// A scheduler that no longer holds the batch's shard publishes none of it.
func TestABatchIsNotPublishedWithoutItsLease(t *testing.T) {
	e := newBatchEnv(t)
	at := time.Now().Truncate(time.Microsecond)
	due := e.plan(e.batchFires(2, "skip", at)...)
	d, _ := e.dispatcher(Config{}, func(int, int64) bool { return false })
	d.Fire(e.ctx, due)
	d.Drain(e.ctx)
	if msgs := e.messages(); len(msgs) != 0 {
		t.Fatalf("published %+v without the lease", msgs)
	}
}

// With tracing on the planner plans no batches, but a batch planned
// before (or by a scheduler without tracing) still goes out as one
// message: with one publish span, its first run's, whose context the
// message carries, naming the batch and its size.
func TestABatchWithTracingOn(t *testing.T) {
	e := newBatchEnv(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	at := time.Now().Truncate(time.Microsecond)
	due := e.plan(e.batchFires(2, "skip", at)...)

	var ts TestSignals
	ts.Init(t)
	d, err := New(Config{TriggeredDelay: -1}, Deps{JS: e.js, Pool: e.pool, Owner: "me", Log: zaptest.NewLogger(t),
		Trace: spans.New(tp), TestSignals: ts})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	d.Fire(e.ctx, due)
	e.waitWritten(d, wire.StatusTriggered, runIDs(due)...)

	msgs := e.messages()
	if len(msgs) != 1 || !slices.Equal(msgs[0].runs, runIDs(due)) {
		t.Fatalf("published %+v, want the batch as one message", msgs)
	}
	m, err := e.trig.GetMsg(e.ctx, msgs[0].seq)
	if err != nil {
		t.Fatal(err)
	}
	var publish []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == spans.NamePublish {
			publish = append(publish, s)
		}
	}
	if len(publish) != 1 {
		t.Fatalf("%d publish spans, want one for the message", len(publish))
	}
	attrs := map[attribute.Key]attribute.Value{}
	for _, a := range publish[0].Attributes {
		attrs[a.Key] = a.Value
	}
	if attrs[runtrace.AttrRunID].AsInt64() != due[0].RunID || attrs["jetjob.batch"].AsInt64() != due[0].Batch ||
		attrs[runtrace.AttrRuns].AsInt64() != 2 {
		t.Errorf("publish span attributes %v, want run %d, batch %d, 2 runs", attrs, due[0].RunID, due[0].Batch)
	}
	if tp := m.Header.Get(runtrace.HeaderTraceparent); !strings.Contains(tp, publish[0].SpanContext.TraceID().String()) {
		t.Errorf("message traceparent %q, want the publish span's trace %s", tp, publish[0].SpanContext.TraceID())
	}
}

// A batch too big for NATS (its jobs' params grew after it was planned)
// can never be published, and its runs may not go out alone: they end
// FAILED saying why, and the runs after it are published as usual.
func TestABatchTooBigToPublishFails(t *testing.T) {
	e := newBatchEnv(t)
	limit := e.js.Conn().MaxPayload()
	const params = 60_000
	n := int(limit/params) + 1 // over the server's max payload together
	if n > wire.MaxBatchRuns {
		t.Fatalf("max payload %d: no batch of at most %d runs of %d-byte params is too big; the test needs a larger params", limit, wire.MaxBatchRuns, params)
	}
	at := time.Now().Truncate(time.Microsecond)
	fires := make([]runs.Fire, 0, n+1)
	for i := range n {
		// Runs of jobs the test never creates (runs outlive their jobs):
		// the dispatcher is handed them as planned, with their params.
		fires = append(fires, runs.Fire{JobID: int64(1000 + i), Group: "g", TriggerType: wire.TriggerSchedule,
			Status: wire.StatusScheduled, ScheduledAt: at, Batch: 1})
	}
	fires = append(fires, runs.Fire{JobID: 999, Group: "g", TriggerType: wire.TriggerSchedule,
		Status: wire.StatusScheduled, ScheduledAt: at.Add(time.Millisecond)})
	written := e.insert(fires...)
	big := `"` + strings.Repeat("x", params) + `"`
	due := make([]runs.Planned, 0, len(written))
	var members []int64
	for _, w := range written {
		p := runs.Planned{RunID: w.RunID, JobID: w.JobID, Group: "g", Epoch: 1, Handler: "h", Params: big,
			TriggerType: wire.TriggerSchedule, ScheduledAt: w.ScheduledAt, Batch: w.Batch}
		if w.Batch != 0 {
			members = append(members, w.RunID)
		}
		due = append(due, p)
	}
	after := due[len(due)-1]
	if len(members) != n || after.Batch != 0 {
		t.Fatalf("planned %d runs in the batch and %+v after it", len(members), after)
	}

	d, _ := e.dispatcher(Config{TriggeredDelay: -1}, nil)
	d.Fire(e.ctx, due)
	e.waitWritten(d, wire.StatusFailed, members...)
	e.waitWritten(d, wire.StatusTriggered, after.RunID)
	var msg string
	if err := e.pool.QueryRow(e.ctx, `SELECT message FROM job_runs WHERE id = $1`, members[0]).Scan(&msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "max payload") {
		t.Errorf("FAILED run says %q, want why (NATS's max payload)", msg)
	}
	if msgs := e.messages(); len(msgs) != 1 || !slices.Equal(msgs[0].runs, []int64{after.RunID}) {
		t.Errorf("published %d messages, want only run %d's", len(msgs), after.RunID)
	}
}

// A lone trigger too big for NATS (only a server whose max payload is below
// the params limit sees one) would be refused on every attempt: its run ends
// FAILED saying why instead of being retried for ever, and the run after it
// is published as usual.
func TestATriggerTooBigToPublishFails(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte("max_payload: 32KB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, nc, js := natsembed.StartTestWith(t, natsembed.Options{ConfigFile: conf})
	e := newBatchEnvOn(t, js)
	if limit := nc.MaxPayload(); limit != 32<<10 {
		t.Fatalf("server max payload %d, want 32 KiB", limit)
	}
	at := time.Now().Truncate(time.Microsecond)
	fires := []runs.Fire{
		{JobID: 1000, Group: "g", TriggerType: wire.TriggerSchedule, Status: wire.StatusScheduled, ScheduledAt: at},
		{JobID: 1001, Group: "g", TriggerType: wire.TriggerSchedule, Status: wire.StatusScheduled, ScheduledAt: at.Add(time.Millisecond)},
	}
	written := e.insert(fires...)
	due := make([]runs.Planned, len(written))
	for i, w := range written {
		due[i] = runs.Planned{RunID: w.RunID, JobID: w.JobID, Group: "g", Epoch: 1, Handler: "h",
			TriggerType: wire.TriggerSchedule, ScheduledAt: w.ScheduledAt}
	}
	due[0].Params = `"` + strings.Repeat("x", 40<<10) + `"` // within the params limit, over the server's

	d, _ := e.dispatcher(Config{TriggeredDelay: -1}, nil)
	d.Fire(e.ctx, due)
	e.waitWritten(d, wire.StatusFailed, due[0].RunID)
	e.waitWritten(d, wire.StatusTriggered, due[1].RunID)
	var msg string
	if err := e.pool.QueryRow(e.ctx, `SELECT message FROM job_runs WHERE id = $1`, due[0].RunID).Scan(&msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "max payload") {
		t.Errorf("FAILED run says %q, want why (NATS's max payload)", msg)
	}
	if msgs := e.messages(); len(msgs) != 1 || !slices.Equal(msgs[0].runs, []int64{due[1].RunID}) {
		t.Errorf("published %d messages, want only run %d's", len(msgs), due[1].RunID)
	}
}

// batchesOf gathers each batch's runs in due's order, whether they are
// adjacent (the wheel's order: no copy) or not, and never writes over due.
func TestBatchesOfGathersEveryRun(t *testing.T) {
	due := []runs.Planned{{RunID: 1, Batch: 1}, {RunID: 2, Batch: 1}, {RunID: 3}, {RunID: 4, Batch: 4},
		{RunID: 5, Batch: 1}, {RunID: 6, Batch: 4}, {RunID: 7, Batch: 4}}
	before := slices.Clone(due)
	got := batchesOf(due)
	ids := func(rs []runs.Planned) []int64 {
		var out []int64
		for _, r := range rs {
			out = append(out, r.RunID)
		}
		return out
	}
	if len(got) != 2 || !slices.Equal(ids(got[1]), []int64{1, 2, 5}) || !slices.Equal(ids(got[4]), []int64{4, 6, 7}) {
		t.Fatalf("batches %v and %v (%d in all), want [1 2 5] and [4 6 7]", ids(got[1]), ids(got[4]), len(got))
	}
	if !slices.Equal(due, before) {
		t.Fatalf("due changed to %v", ids(due))
	}
	if batchesOf([]runs.Planned{{RunID: 1}}) != nil {
		t.Fatal("batches found among lone runs")
	}
}
