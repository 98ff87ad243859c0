package worker

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	nc := &nats.Conn{} // never used: New only checks that one is given
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no connection", Config{Group: "g"}, "NATS connection is required"},
		{"no group", Config{NATS: nc}, `invalid group ""`},
		{"bad group", Config{NATS: nc, Group: "a.b"}, `invalid group "a.b"`},
		{"bad id", Config{NATS: nc, Group: "g", ID: "x y"}, `invalid worker id "x y"`},
		{"negative concurrency", Config{NATS: nc, Group: "g", Concurrency: -1}, "concurrency -1"},
		{"negative max deliver", Config{NATS: nc, Group: "g", MaxDeliver: -2}, "max deliver -2"},
		{"tiny ack wait", Config{NATS: nc, Group: "g", AckWait: time.Millisecond}, "ack wait 1ms"},
		{"negative grace", Config{NATS: nc, Group: "g", ShutdownGrace: -time.Second}, "shutdown grace -1s"},
		{"short lock ttl", Config{NATS: nc, Group: "g", LockTTL: 500 * time.Millisecond}, "lock ttl 500ms: want between 1s and 6s"},
		{"long lock ttl", Config{NATS: nc, Group: "g", LockTTL: time.Minute}, "lock ttl 1m0s"},
		{"bad streams", Config{NATS: nc, Group: "g", Streams: Streams{Replicas: 9}}, "stream replicas 9"},
		{"no trigger keys", Config{NATS: nc, Group: "g"}, "trigger keys: set TriggerKeys"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: error %v, want one containing %q", err, c.want)
			}
		})
	}

	w, err := New(Config{NATS: nc, Group: "g", AcceptUnsignedTriggers: true})
	if err != nil {
		t.Fatal(err)
	}
	if !wire.ValidName(w.ID()) {
		t.Errorf("default id %q is not a valid name", w.ID())
	}
	c := w.cfg
	if c.Concurrency != DefaultConcurrency || c.AckWait != DefaultAckWait || c.MaxDeliver != DefaultMaxDeliver ||
		c.AbandonGrace != DefaultAbandonGrace || c.ShutdownGrace != DefaultShutdownGrace || c.Logger == nil {
		t.Errorf("defaults not applied: %+v", c)
	}
}

func TestHandlePanicsOnMisuse(t *testing.T) {
	t.Parallel()
	w, err := New(Config{NATS: &nats.Conn{}, Group: "g", AcceptUnsignedTriggers: true})
	if err != nil {
		t.Fatal(err)
	}
	ok := func(context.Context, *Job) error { return nil }
	w.Handle("a", ok)
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", what)
			}
		}()
		f()
	}
	mustPanic("duplicate", func() { w.Handle("a", ok) })
	mustPanic("empty name", func() { w.Handle("", ok) })
	mustPanic("long name", func() { w.Handle(strings.Repeat("x", 256), ok) })
	// Issue #26, finding 14: the API's pattern of handler names.
	mustPanic("name with a space", func() { w.Handle("my handler", ok) })
	mustPanic("name with a slash", func() { w.Handle("a/b", ok) })
	mustPanic("name starting with a digit", func() { w.Handle("1a", ok) })
	mustPanic("name with a bidi override", func() { w.Handle("a\u202e", ok) })
	mustPanic("name of 129 characters", func() { w.Handle("h"+strings.Repeat("x", 128), ok) })
	w.Handle("demoJobHandler", ok) // xxl-job bean names keep their case
	w.Handle("billing.invoice-v2_x", ok)
	mustPanic("nil handler", func() { w.Handle("b", nil) })
}

func TestRunWithoutHandlersFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w, err := New(Config{NATS: e.nc, Group: testGroup, TriggerKeys: e.keys})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(e.ctx()); err == nil || !strings.Contains(err.Error(), "no handlers") {
		t.Fatalf("Run: %v, want a no-handlers error", err)
	}
}

// Init hooks run before the first run, destroy hooks after Run; a failing
// init makes Run fail after destroying what was initialised.
func TestInitAndDestroy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	var order []string // written by Run's goroutine and handlers, read after Run returned
	inited := make(chan struct{})
	r := e.start(Config{}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			select {
			case <-inited:
				order = append(order, "run")
				return nil
			default:
				return errors.New("run before init")
			}
		},
			WithInit(func(context.Context) error { order = append(order, "init"); close(inited); return nil }),
			WithDestroy(func(context.Context) error { order = append(order, "destroy"); return nil }))
	})
	e.publish(trigger(1, "h", ""))
	if f := ev.waitFinished(1)[1]; f.Status != wire.StatusSucceeded {
		t.Fatalf("finished %+v", f)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ","); got != "init,run,destroy" {
		t.Errorf("hooks ran %s, want init,run,destroy", got)
	}

	// A failing init.
	w, err := New(Config{NATS: e.nc, Group: "other", TriggerKeys: e.keys})
	if err != nil {
		t.Fatal(err)
	}
	destroyed := false
	w.Handle("ok", func(context.Context, *Job) error { return nil },
		WithDestroy(func(context.Context) error { destroyed = true; return nil }))
	w.Handle("bad", func(context.Context, *Job) error { return nil },
		WithInit(func(context.Context) error { return errors.New("no database") }))
	err = w.Run(e.ctx())
	if err == nil || !strings.Contains(err.Error(), `init of handler "bad": no database`) {
		t.Fatalf("Run: %v, want the init error", err)
	}
	if !destroyed {
		t.Error("the handler initialised before the failure was not destroyed")
	}
}

// The SDK's own names for what package stream defines say the same.
func TestSDKNamesMatchStream(t *testing.T) {
	t.Parallel()
	if DefaultAckWait != stream.DefaultAckWait || DefaultMaxDeliver != stream.DefaultMaxDeliver || DefaultLockTTL != stream.LockTTL {
		t.Errorf("defaults: ack wait %s, max deliver %d, lock TTL %s; package stream's: %s, %d, %s",
			DefaultAckWait, DefaultMaxDeliver, DefaultLockTTL, stream.DefaultAckWait, stream.DefaultMaxDeliver, stream.LockTTL)
	}
	// Every field of Streams reaches stream.Config, and nothing else.
	s := Streams{Replicas: 3, DuplicateWindow: time.Minute, LogMaxAge: time.Hour, LogMaxBytes: 1 << 20, WorkerTTL: 9 * time.Second}
	want := stream.Config{Replicas: 3, DuplicateWindow: time.Minute, LogMaxAge: time.Hour, LogMaxBytes: 1 << 20, WorkerTTL: 9 * time.Second}
	if got := s.config(); got != want || reflect.TypeOf(s).NumField() != reflect.TypeOf(want).NumField() {
		t.Errorf("Streams %+v as stream.Config: %+v, want %+v (with as many fields)", s, got, want)
	}
	for _, tt := range []TriggerType{TriggerSchedule, TriggerMisfire, TriggerManual, TriggerRetry, TriggerParent, TriggerBackfill} {
		if !wire.TriggerType(tt).Valid() {
			t.Errorf("trigger type %q is not one of wire's", tt)
		}
	}
}

// New registers the worker's series in Config.Metrics, and fails when a
// worker of the same group is registered there already.
func TestNewRegistersMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	cfg := Config{NATS: &nats.Conn{}, Group: "g", AcceptUnsignedTriggers: true, Metrics: reg}
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		found = found || mf.GetName() == "jetjob_worker_slots"
	}
	if !found {
		t.Errorf("jetjob_worker_slots not in the registry: %d families", len(mfs))
	}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "register metrics") {
		t.Errorf("second worker of the group in one registry: %v, want a registration error", err)
	}
	cfg.Group = "other"
	if _, err := New(cfg); err != nil {
		t.Errorf("a worker of another group beside it: %v", err)
	}
}
