package worker

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/shared/wire"
)

// ranLog records the runs a handler executed.
type ranLog struct {
	mu  sync.Mutex
	ids []int64
}

func (r *ranLog) handler(context.Context, *Job) error { return nil }

func (r *ranLog) record(h HandlerFunc) HandlerFunc {
	return func(ctx context.Context, job *Job) error {
		r.mu.Lock()
		r.ids = append(r.ids, job.RunID)
		r.mu.Unlock()
		return h(ctx, job)
	}
}

func (r *ranLog) has(id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.ids, id)
}

// encode is tr's message body.
func encode(t *testing.T, tr *wire.Trigger) []byte {
	t.Helper()
	data, err := wire.EncodeTrigger(tr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A worker runs only what a scheduler it trusts signed, for its group, as
// the kind of message it arrived as. Every other trigger is handed back,
// never run and without an event (the run ids of a forged message are not
// to be believed), at each of its deliveries, counted by reason, and
// logged once per subject and key; once its deliveries run out it stays
// for the schedulers' lost-run monitor to judge (scheduler/internal/lost).
// Signed triggers and batches run as ever.
func TestWorkerRefusesTriggersNotSignedForIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	logger, observed := observedLogger(t, zap.ErrorLevel)
	var ran ranLog
	const deliveries = 2
	r := e.start(Config{Concurrency: 1, MaxDeliver: deliveries, Logger: logger}, func(w *Worker) {
		w.Handle("h", ran.record(ran.handler))
	})
	stranger, _ := testKeys(t)
	anyG, batch := stream.TriggerAny(testGroup), stream.TriggerBatch(testGroup)
	publishMsg := func(m *nats.Msg) {
		t.Helper()
		if _, err := e.js.PublishMsg(e.ctx(), m); err != nil {
			t.Fatal(err)
		}
	}
	// Unsigned, twice.
	for _, id := range []int64{1, 2} {
		m := nats.NewMsg(anyG)
		m.Data = encode(t, trigger(id, "h", ""))
		publishMsg(m)
	}
	// Signed by a key the worker does not accept.
	m := nats.NewMsg(anyG)
	m.Data = encode(t, trigger(3, "h", ""))
	stranger.Sign(m.Header, testGroup, false, m.Data)
	publishMsg(m)
	// Signed, then its params changed.
	m = e.signed(anyG, testGroup, false, encode(t, trigger(4, "h", "")))
	m.Data = encode(t, trigger(4, "h", "rm -rf /"))
	publishMsg(m)
	// Signed for another group (a trigger of group h's replayed here).
	publishMsg(e.signed(anyG, "h", false, encode(t, trigger(5, "h", ""))))
	// A lone trigger's signature on a batch.
	publishMsg(e.signed(batch, testGroup, false, encode(t, trigger(6, "h", ""))))

	// What a scheduler sent runs: a lone trigger and a batch.
	e.publish(trigger(10, "h", ""))
	e.publishBatch(trigger(11, "h", ""), trigger(12, "h", ""))
	ev.waitFinished(10, 11, 12)

	// Every delivery of each: handed back, delivered again, refused again.
	reasons := map[string]float64{"unsigned": 2 * deliveries, "unknown_key": 1 * deliveries, "bad_signature": 3 * deliveries}
	ev.waitFor("every delivery of every refused trigger to be counted", func() bool {
		for reason, want := range reasons {
			if counterValue(r.w.metrics.rejected.WithLabelValues(reason)) != want {
				return false
			}
		}
		return true
	})
	for id := int64(1); id <= 6; id++ {
		if ran.has(id) || ev.run(id) != nil {
			t.Errorf("refused trigger of run %d: ran %v, events %+v; want neither", id, ran.has(id), ev.run(id))
		}
	}
	if left := e.triggersLeft(); left != 6 {
		t.Errorf("%d triggers left in the stream, want the 6 refused ones, for the lost-run monitor", left)
	}
	// Once per subject and key: unsigned on the shared subject (runs 1,
	// 2), the stranger's key, the scheduler's key on the shared subject
	// (runs 4, 5), and on the batch subject.
	refusals := observed.FilterMessageSnippet("trigger refused")
	if n := refusals.Len(); n != 4 {
		t.Errorf("%d refusals logged, want 4 (one per subject and key): %v", n, refusals.All())
	}
	if n := refusals.FilterField(zap.String("reason", "unsigned")).FilterField(zap.String("subject", anyG)).Len(); n != 1 {
		t.Errorf("unsigned triggers on %s logged %d times, want once", anyG, n)
	}
}

// Keys are rotated without a stop: a worker accepting the old and the new
// key runs triggers signed by either. A worker told to accept unsigned
// triggers runs them, and still refuses a signature that does not verify.
func TestWorkerKeyRotationAndUnsignedOptIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	next, nextKeys := testKeys(t)
	both, err := trigsign.NewVerifier(e.signer.PublicKey(), next.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	var ran ranLog
	e.start(Config{ID: "rotating", TriggerKeys: both}, func(w *Worker) { w.Handle("h", ran.record(ran.handler)) })
	e.publish(trigger(1, "h", ""))
	m := nats.NewMsg(stream.TriggerAny(testGroup))
	m.Data = encode(t, trigger(2, "h", ""))
	next.Sign(m.Header, testGroup, false, m.Data)
	if _, err := e.js.PublishMsg(e.ctx(), m); err != nil {
		t.Fatal(err)
	}
	ev.waitFinished(1, 2)

	// A group whose workers accept unsigned triggers (and check the
	// signature of those that carry one).
	const open = "open"
	r := e.start(Config{Group: open, ID: "open-1", TriggerKeys: nextKeys, AcceptUnsignedTriggers: true},
		func(w *Worker) { w.Handle("h", ran.record(ran.handler)) })
	tr := trigger(3, "h", "")
	tr.Group = open
	m = nats.NewMsg(stream.TriggerAny(open))
	m.Data = encode(t, tr)
	if _, err := e.js.PublishMsg(e.ctx(), m); err != nil {
		t.Fatal(err)
	}
	ev.waitFinished(3)
	tr = trigger(4, "h", "")
	tr.Group = open
	m = nats.NewMsg(stream.TriggerAny(open))
	m.Data = encode(t, tr)
	e.signer.Sign(m.Header, open, false, m.Data) // not a key of nextKeys
	if _, err := e.js.PublishMsg(e.ctx(), m); err != nil {
		t.Fatal(err)
	}
	ev.waitFor("the wrongly signed trigger to be refused", func() bool {
		return counterValue(r.w.metrics.rejected.WithLabelValues("unknown_key")) == 1
	})
	if ran.has(4) {
		t.Error("a trigger signed by a key the worker does not accept ran")
	}
}

// counterValue reads a counter.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
