package kills

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/worker/internal/testnats"
)

// A Set learns the kill requests made before its watch started, before it
// says they are loaded, and the ones made afterwards as they come, each
// passed on to OnKill; deletes and keys that are not run ids are ignored.
// Request puts one as the API does.
func TestWatch(t *testing.T) {
	e := testnats.New(t)
	kv, err := stream.Kills(e.Ctx(), e.JS, stream.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(e.Ctx(), stream.KillKey(1), []byte("by the API")); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(e.Ctx(), "not-a-run", []byte("x")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[int64]string{}
	s := New(Config{JS: e.JS, Logger: zaptest.NewLogger(t), OnKill: func(run int64, reason string) {
		mu.Lock()
		defer mu.Unlock()
		got[run] = reason
	}})
	ctx, cancel := context.WithCancel(context.Background())
	loaded, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); s.Watch(ctx, loaded) }()
	defer func() { cancel(); <-done }()
	select {
	case <-loaded:
	case <-time.After(testnats.WaitLimit):
		t.Fatal("existing kill requests never loaded")
	}
	if !s.Killed(1) || s.Killed(2) {
		t.Errorf("after loading: killed(1) %v, killed(2) %v; want true, false", s.Killed(1), s.Killed(2))
	}

	if err := s.Request(e.Ctx(), 2, "covered by run 3 (block strategy cover_early)"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(e.Ctx(), stream.KillKey(4), nil); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(e.Ctx(), stream.KillKey(1)); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, testnats.WaitLimit, "the new kill requests", func() bool { return s.Killed(2) && s.Killed(4) })
	if !s.Killed(1) {
		t.Error("a deleted kill request was forgotten: deletes are ignored")
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[int64]string{1: "by the API", 2: "covered by run 3 (block strategy cover_early)", 4: "kill requested"}
	for run, reason := range want {
		if got[run] != reason {
			t.Errorf("OnKill for run %d: %q, want %q", run, got[run], reason)
		}
	}
	if len(got) != len(want) {
		t.Errorf("OnKill calls %v, want %v", got, want)
	}
	entry, err := kv.Get(e.Ctx(), strconv.Itoa(2))
	if err != nil || entry.Operation() != jetstream.KeyValuePut {
		t.Errorf("Request's key: %v, %v", entry, err)
	}
}

func TestErrorMessage(t *testing.T) {
	if got := (Error{Reason: "by the API"}).Error(); got != "killed: by the API" {
		t.Errorf("%q", got)
	}
}
