package supersede

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/shared/wire"
)

// These tests need neither PostgreSQL nor NATS, but the package's
// TestMain (started_test.go) starts PostgreSQL for the whole test binary.

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// The unapplied events say of each asked run when and where it first
// started, and the highest status any of them reached, whatever order the
// messages are read in; runs nobody asked about are not collected.
func TestNoteFirstStartAndHighestStatus(t *testing.T) {
	started := func(run int64, worker string, at time.Time) wire.Event {
		return wire.Event{Kind: wire.EventStarted, RunID: run, WorkerID: worker, Status: wire.StatusRunning, At: at}
	}
	finished := func(run int64, worker string, st wire.Status, at time.Time) wire.Event {
		return wire.Event{Kind: wire.EventFinished, RunID: run, WorkerID: worker, Status: st, At: at}
	}
	asked := map[int64]bool{1: true, 3: true, 4: true}
	out := map[pendingKey]wire.RunStart{}
	// Run 1 started on a, died there, and was started again on b (a start
	// check that found no answer yet); the messages come in any order.
	note(out, asked, "g", []wire.Event{started(1, "b", t0.Add(20*time.Second)), finished(1, "b", wire.StatusFailed, t0.Add(25*time.Second))})
	note(out, asked, "g", []wire.Event{started(1, "a", t0.In(time.FixedZone("CET", 3600))), started(2, "a", t0)})
	note(out, asked, "g", []wire.Event{started(1, "c", t0.Add(30*time.Second))})
	// Run 3's started event was applied already; its end was not.
	note(out, asked, "g", []wire.Event{finished(3, "a", wire.StatusSucceeded, t0)})

	if r := out[pendingKey{1, "g"}]; r.WorkerID != "a" || !r.StartedAt.Equal(t0) || r.StartedAt.Location() != time.UTC || r.Status != wire.StatusFailed {
		t.Errorf("run 1: %+v, want first started on a at %s (UTC), status FAILED", r, t0)
	}
	if _, ok := out[pendingKey{2, "g"}]; ok {
		t.Errorf("run 2 collected; nobody asked about it")
	}
	if r := out[pendingKey{3, "g"}]; r.Status != wire.StatusSucceeded || !r.StartedAt.IsZero() || r.WorkerID != "" {
		t.Errorf("run 3: %+v, want SUCCEEDED with no start (that is job_runs' to say)", r)
	}
	if r, ok := out[pendingKey{4, "g"}]; ok || r.Started() {
		t.Errorf("run 4: %+v, want nothing known: not started", r)
	}
}

// The answer combines job_runs with the events still waiting to be
// applied: a run whose start is only in the stream (its worker died before
// the applier took the event) has started, and must not run again; what
// job_runs recorded of a start is kept, and a status never goes back.
func TestMergeStoredAndUnapplied(t *testing.T) {
	for _, c := range []struct {
		name           string
		stored, events wire.RunStart
		want           wire.RunStart
		started        bool
	}{
		{"start only in the stream",
			wire.RunStart{Status: wire.StatusTriggered},
			wire.RunStart{Status: wire.StatusRunning, WorkerID: "a", StartedAt: t0},
			wire.RunStart{Status: wire.StatusRunning, WorkerID: "a", StartedAt: t0}, true},
		{"start recorded, a later one in the stream",
			wire.RunStart{Status: wire.StatusRunning, WorkerID: "a", StartedAt: t0},
			wire.RunStart{Status: wire.StatusRunning, WorkerID: "b", StartedAt: t0.Add(time.Minute)},
			wire.RunStart{Status: wire.StatusRunning, WorkerID: "a", StartedAt: t0}, true},
		{"ended, a stale start in the stream",
			wire.RunStart{Status: wire.StatusSucceeded, WorkerID: "a", StartedAt: t0},
			wire.RunStart{Status: wire.StatusRunning, WorkerID: "a", StartedAt: t0},
			wire.RunStart{Status: wire.StatusSucceeded, WorkerID: "a", StartedAt: t0}, true},
		{"ended in the stream, start applied",
			wire.RunStart{Status: wire.StatusRunning, WorkerID: "a", StartedAt: t0},
			wire.RunStart{Status: wire.StatusLost},
			wire.RunStart{Status: wire.StatusLost, WorkerID: "a", StartedAt: t0}, true},
		{"triggered, nothing in the stream",
			wire.RunStart{Status: wire.StatusTriggered},
			wire.RunStart{},
			wire.RunStart{Status: wire.StatusTriggered}, false},
		{"no such run",
			wire.RunStart{},
			wire.RunStart{},
			wire.RunStart{}, false},
	} {
		got := merge(c.stored, c.events)
		if got != c.want || got.Started() != c.started {
			t.Errorf("%s: merge = %+v (started %v), want %+v (started %v)", c.name, got, got.Started(), c.want, c.started)
		}
	}
}
