package worker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/wire"
)

const testBeat = 100 * time.Millisecond

// workersKV opens the heartbeat bucket.
func (e *env) workersKV() jetstream.KeyValue {
	e.t.Helper()
	kv, err := stream.Workers(e.ctx(), e.js, stream.Config{})
	if err != nil {
		e.t.Fatal(err)
	}
	return kv
}

// heartbeat returns the worker's current heartbeat, nil when it has none.
func heartbeat(t *testing.T, kv jetstream.KeyValue, id string) *wire.WorkerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	entry, err := kv.Get(ctx, stream.WorkerKey(testGroup, id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	info, err := wire.DecodeWorkerInfo(entry.Value())
	if err != nil {
		t.Fatalf("heartbeat %s: %v", entry.Value(), err)
	}
	return info
}

// waitHeartbeat polls until the worker's heartbeat satisfies cond.
func waitHeartbeat(t *testing.T, kv jetstream.KeyValue, id, what string, cond func(*wire.WorkerInfo) bool) *wire.WorkerInfo {
	t.Helper()
	var hb *wire.WorkerInfo
	testwait.Eventually(t, waitLimit, what, func() bool {
		hb = heartbeat(t, kv, id)
		return hb != nil && cond(hb)
	})
	return hb
}

// While Run runs the key holds the worker's handlers, capacity and running
// runs, refreshed every beat; a graceful stop deletes it.
func TestRegistryHeartbeat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	kv := e.workersKV()
	ev := e.events()
	started := make(chan struct{})
	proceed := make(chan struct{})
	before := time.Now().UTC()
	r := e.start(Config{ID: "w1", Concurrency: 3, HeartbeatInterval: testBeat}, func(w *Worker) {
		w.Handle("zeta", func(ctx context.Context, job *Job) error { return nil })
		w.Handle("alpha", func(ctx context.Context, job *Job) error {
			close(started)
			<-proceed
			return nil
		})
	})

	hb := waitHeartbeat(t, kv, "w1", "the first heartbeat", func(*wire.WorkerInfo) bool { return true })
	host, _ := os.Hostname()
	if hb.ID != "w1" || hb.Group != testGroup || hb.Host != host || hb.PID != os.Getpid() || hb.Version == "" ||
		!slices.Equal(hb.Handlers, []string{"alpha", "zeta"}) || hb.Capacity != 3 || len(hb.Running) != 0 ||
		hb.StartedAt.Before(before.Truncate(time.Millisecond)) || hb.BeatAt.Before(hb.StartedAt) {
		t.Errorf("heartbeat %+v", hb)
	}
	first, startedAt := hb.BeatAt, hb.StartedAt

	e.publish(trigger(7, "alpha", ""))
	recv(t, "the handler to start", started)
	hb = waitHeartbeat(t, kv, "w1", "run 7 in the heartbeat", func(hb *wire.WorkerInfo) bool {
		return slices.Equal(hb.Running, []int64{7})
	})
	if !hb.BeatAt.After(first) || !hb.StartedAt.Equal(startedAt) {
		t.Errorf("beat_at not refreshed or started_at changed: first beat %s, now %+v", first, hb)
	}
	close(proceed)
	ev.waitFinished(7)
	waitHeartbeat(t, kv, "w1", "run 7 to leave the heartbeat", func(hb *wire.WorkerInfo) bool {
		return len(hb.Running) == 0
	})

	if err := r.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Deregistration happens before Run returns, and no beat follows it.
	if hb := heartbeat(t, kv, "w1"); hb != nil {
		t.Fatalf("heartbeat still there after a graceful stop: %+v", hb)
	}
	w, err := kv.Watch(e.ctx(), stream.WorkerKey(testGroup, "w1"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	last := recv(t, "the key's last entry", w.Updates())
	if last == nil || last.Operation() != jetstream.KeyValueDelete {
		t.Fatalf("last entry of the key: %+v, want a delete marker", last)
	}
}

// A heartbeat that cannot be stored is logged and retried at the next beat;
// the worker keeps running meanwhile.
func TestRegistryRetriesFailedHeartbeat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	kv := e.workersKV()
	ev := e.events()
	log, logs := observedLogger(t, zap.WarnLevel)
	e.start(Config{ID: "w1", HeartbeatInterval: testBeat, Logger: log}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error { return nil })
	})
	waitHeartbeat(t, kv, "w1", "the first heartbeat", func(*wire.WorkerInfo) bool { return true })

	// Without the bucket every put fails.
	if err := e.js.DeleteKeyValue(e.ctx(), stream.WorkersBucket); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, waitLimit, "a failed heartbeat to be logged", func() bool {
		return logs.FilterMessage("heartbeat not stored; retried next beat").Len() > 0
	})
	e.publish(trigger(1, "h", ""))
	if f := ev.waitFinished(1)[1]; f.Status != wire.StatusSucceeded {
		t.Errorf("run while heartbeats fail: %+v", f)
	}

	kv = e.workersKV() // created anew
	waitHeartbeat(t, kv, "w1", "the heartbeat to be stored again", func(*wire.WorkerInfo) bool { return true })
}

// A worker that dies without deregistering disappears when its key's TTL
// expires.
func TestRegistryKeyExpiresAfterCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.js.DeleteKeyValue(e.ctx(), stream.WorkersBucket); err != nil {
		t.Fatal(err)
	}
	streams := stream.Config{WorkerTTL: time.Second}
	kv, err := stream.Workers(e.ctx(), e.js, streams)
	if err != nil {
		t.Fatal(err)
	}
	r := e.start(Config{ID: "w1", HeartbeatInterval: testBeat, Streams: Streams{WorkerTTL: time.Second}}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error { return nil })
	})
	waitHeartbeat(t, kv, "w1", "the first heartbeat", func(*wire.WorkerInfo) bool { return true })
	// The heartbeat outlives several TTLs while the worker is alive. This
	// proves an absence over a span (the key never expires), which no
	// event can signal: an expiry by the bucket's TTL leaves no delete
	// marker for a watch to see (the bucket keeps none). So the loop
	// samples the key, and the sleep only paces the samples; nothing
	// waits on it.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if heartbeat(t, kv, "w1") == nil {
			t.Fatal("heartbeat of a live worker expired")
		}
		time.Sleep(50 * time.Millisecond) // sampling a steady state, not synchronising
	}

	r.w.cfg.NATS.Close() // as good as a crash: nothing more reaches NATS
	if err := r.wait(); err == nil {
		t.Fatal("Run returned nil after its connection closed")
	}
	testwait.Eventually(t, waitLimit, "the dead worker's key to expire", func() bool { return heartbeat(t, kv, "w1") == nil })
}

func TestHeartbeatIntervalValidated(t *testing.T) {
	t.Parallel()
	nc := &nats.Conn{}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{HeartbeatInterval: -time.Second}, "heartbeat interval -1s: must be positive"},
		{Config{HeartbeatInterval: 15 * time.Second}, "must be shorter than the workers bucket TTL 15s"},
		{Config{HeartbeatInterval: 2 * time.Second, Streams: Streams{WorkerTTL: 2 * time.Second}}, "TTL 2s"},
	} {
		c.cfg.NATS, c.cfg.Group, c.cfg.AcceptUnsignedTriggers = nc, "g", true
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
	w, err := New(Config{NATS: nc, Group: "g", AcceptUnsignedTriggers: true})
	if err != nil {
		t.Fatal(err)
	}
	if w.cfg.HeartbeatInterval != DefaultHeartbeatInterval {
		t.Errorf("default heartbeat interval %s", w.cfg.HeartbeatInterval)
	}
	if _, err := New(Config{NATS: nc, Group: "g", AcceptUnsignedTriggers: true, HeartbeatInterval: 20 * time.Second,
		Streams: Streams{WorkerTTL: time.Minute}}); err != nil {
		t.Errorf("interval below a longer TTL refused: %v", err)
	}
}

// The heartbeat's JSON is the contract with the scheduler side.
func TestWorkerInfoWire(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	valid := func() *wire.WorkerInfo {
		return &wire.WorkerInfo{
			ID: "w1", Group: "g", Host: "h", PID: 42, Version: "v1.2.3", Handlers: []string{"http", "shell"},
			Capacity: 4, StartedAt: at, BeatAt: at.Add(time.Second),
		}
	}
	data, err := wire.EncodeWorkerInfo(valid())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"id":"w1","group":"g","host":"h","pid":42,"version":"v1.2.3","handlers":["http","shell"],` +
		`"capacity":4,"running":[],"started_at":"2025-03-01T12:00:00Z","beat_at":"2025-03-01T12:00:01Z"}`
	if string(data) != want {
		t.Errorf("encoded\n%s\nwant\n%s", data, want)
	}
	back, err := wire.DecodeWorkerInfo(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != "w1" || back.Free() != 4 || !back.BeatAt.Equal(at.Add(time.Second)) {
		t.Errorf("decoded %+v", back)
	}

	for _, c := range []struct {
		edit func(*wire.WorkerInfo)
		want string
	}{
		{func(w *wire.WorkerInfo) { w.ID = "a.b" }, `id "a.b" is not a valid name`},
		{func(w *wire.WorkerInfo) { w.Group = "" }, `group "" is not a valid name`},
		{func(w *wire.WorkerInfo) { w.Handlers = nil }, "handlers must not be empty"},
		{func(w *wire.WorkerInfo) { w.Handlers = []string{"a", "a"} }, `handler "a" listed twice`},
		{func(w *wire.WorkerInfo) { w.Capacity = 0 }, "capacity must be positive"},
		{func(w *wire.WorkerInfo) { w.Running = []int64{3, -1} }, "running run id -1"},
		{func(w *wire.WorkerInfo) { w.BeatAt = time.Time{} }, "beat_at is required"},
	} {
		w := valid()
		c.edit(w)
		if _, err := wire.EncodeWorkerInfo(w); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("encode: %v, want an error containing %q", err, c.want)
		}
		w.V = wire.Version
		raw, _ := json.Marshal(w)
		if _, err := wire.DecodeWorkerInfo(raw); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("decode: %v, want an error containing %q", err, c.want)
		}
	}
	if _, err := wire.DecodeWorkerInfo([]byte(strings.Replace(want, `"v":1`, `"v":2`, 1))); !errors.Is(err, wire.ErrVersion) {
		t.Errorf("version 2: %v, want ErrVersion", err)
	}
	if _, err := wire.DecodeWorkerInfo([]byte(`{"v":1,`)); err == nil || !strings.Contains(err.Error(), "malformed JSON") {
		t.Errorf("truncated JSON: %v", err)
	}
}
