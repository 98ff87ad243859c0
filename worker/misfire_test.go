package worker

import (
	"context"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/shared/wire"
)

// lateTrigger is trigger(runID, "h", "") fired late ago with the given type,
// misfire policy and threshold.
func lateTrigger(runID int64, typ wire.TriggerType, policy policy.Misfire, thresholdMS int64, late time.Duration) *wire.Trigger {
	tr := trigger(runID, "h", "")
	tr.TriggerType, tr.MisfirePolicy, tr.MisfireThresholdMS = typ, policy, thresholdMS
	tr.ScheduledAt = time.Now().UTC().Add(-late).Truncate(time.Millisecond)
	return tr
}

// A schedule trigger 10s late under policy skip with a 5s threshold is
// reported EXPIRED and acknowledged; its handler never runs.
func TestLateSkipTriggerExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	var (
		mu    sync.Mutex
		calls []int64
	)
	r := e.start(Config{ID: "w1"}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			mu.Lock()
			calls = append(calls, job.RunID)
			mu.Unlock()
			return nil
		})
	})
	e.publish(lateTrigger(1, wire.TriggerSchedule, "skip", 5000, 10*time.Second))
	e.publish(lateTrigger(2, wire.TriggerMisfire, "skip", 5000, 10*time.Second))

	fin := ev.waitFinished(1, 2)
	want := regexp.MustCompile(`^trigger reached worker w1 (\S+) after its fire time \(misfire threshold 5s, policy skip\): not run$`)
	for _, id := range []int64{1, 2} {
		f := fin[id]
		if f.Status != wire.StatusExpired || f.WorkerID != "w1" || f.JobID != 1000+id {
			t.Errorf("run %d finished %+v, want EXPIRED by w1", id, f)
		}
		m := want.FindStringSubmatch(f.Message)
		if m == nil {
			t.Fatalf("run %d: message %q does not match %s", id, f.Message, want)
		}
		// The lateness is measured when the worker picks the trigger up:
		// 10s plus however long that took, less than the wait limit.
		if late, err := time.ParseDuration(m[1]); err != nil || late < 10*time.Second || late > 10*time.Second+waitLimit {
			t.Errorf("run %d: lateness %q in %q, want 10s plus the delivery time", id, m[1], f.Message)
		}
		if got := ev.run(id); len(got) != 1 {
			t.Errorf("run %d: events %+v, want only the finished one (no handler started)", id, got)
		}
	}
	// A handler is called before the run's finished event is published, so
	// by now any call would have been recorded.
	mu.Lock()
	if len(calls) != 0 {
		t.Errorf("handler called for runs %v, want never", calls)
	}
	mu.Unlock()
	r.waitProcessed(1, 2)
	if left, pending := e.triggersLeft(), e.groupConsumer().NumAckPending; left != 0 || pending != 0 {
		t.Errorf("once both runs were processed: %d triggers left, %d unacknowledged; want them acked", left, pending)
	}
	if s := r.w.Stats(); s.ExpiredTotal != 2 || s.Running != 0 {
		t.Errorf("stats %+v, want 2 expired, none running", s)
	}
}

// Late triggers that the misfire policy, the trigger type or a zero
// threshold let through run as usual.
func TestLateTriggersThatRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		typ       wire.TriggerType
		policy    policy.Misfire
		threshold int64
		late      time.Duration
	}{
		{"fire_all", wire.TriggerSchedule, "fire_all", 5000, 10 * time.Second},
		{"no policy", wire.TriggerSchedule, "", 5000, 10 * time.Second},
		{"fire_once", wire.TriggerMisfire, "fire_once", 5000, 10 * time.Second},
		{"unknown policy", wire.TriggerSchedule, "newer_policy", 5000, 10 * time.Second},
		{"manual under skip", wire.TriggerManual, "skip", 5000, 10 * time.Second},
		{"retry under skip", wire.TriggerRetry, "skip", 5000, 10 * time.Second},
		{"parent under skip", wire.TriggerParent, "skip", 5000, 10 * time.Second},
		{"threshold 0 under skip", wire.TriggerSchedule, "skip", 0, time.Hour},
		{"on time under skip", wire.TriggerSchedule, "skip", int64(waitLimit / time.Millisecond), 0},
	}
	e := newEnv(t)
	ev := e.events()
	var (
		mu    sync.Mutex
		calls = make(map[int64]int)
	)
	r := e.start(Config{}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			mu.Lock()
			calls[job.RunID]++
			mu.Unlock()
			return nil
		})
	})
	var ids []int64
	for i, c := range cases {
		id := int64(i + 1)
		ids = append(ids, id)
		e.publish(lateTrigger(id, c.typ, c.policy, c.threshold, c.late))
	}
	fin := ev.waitFinished(ids...)
	mu.Lock()
	defer mu.Unlock()
	for i, c := range cases {
		id := ids[i]
		if f := fin[id]; f.Status != wire.StatusSucceeded || calls[id] != 1 {
			t.Errorf("%s: finished %+v after %d handler calls, want SUCCEEDED after 1", c.name, f, calls[id])
		}
	}
	r.waitProcessed(ids...)
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers left once every run was processed, want them acked", left)
	}
	if s := r.w.Stats(); s.ExpiredTotal != 0 {
		t.Errorf("stats %+v, want nothing expired", s)
	}
}

// The decision itself, at its boundaries, on a fixed clock.
func TestExpired(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mk := func(typ wire.TriggerType, policy policy.Misfire, thresholdMS int64) *wire.Trigger {
		return &wire.Trigger{RunID: 1, JobID: 2, Group: "g", Handler: "h", TriggerType: typ, ScheduledAt: at,
			MisfirePolicy: policy, MisfireThresholdMS: thresholdMS}
	}
	cases := []struct {
		name string
		trig *wire.Trigger
		now  time.Time
		want string // "" means it runs
	}{
		{"exactly at the threshold", mk(wire.TriggerSchedule, "skip", 5000), at.Add(5 * time.Second), ""},
		{"just past the threshold", mk(wire.TriggerSchedule, "skip", 5000), at.Add(5*time.Second + time.Millisecond),
			"trigger reached worker w 5s after its fire time (misfire threshold 5s, policy skip): not run"},
		{"tenths of a second", mk(wire.TriggerMisfire, "skip", 5000), at.Add(12345 * time.Millisecond),
			"trigger reached worker w 12.3s after its fire time (misfire threshold 5s, policy skip): not run"},
		{"sub-second threshold", mk(wire.TriggerSchedule, "skip", 50), at.Add(120 * time.Millisecond),
			"trigger reached worker w 120ms after its fire time (misfire threshold 50ms, policy skip): not run"},
		{"early (clock skew)", mk(wire.TriggerSchedule, "skip", 5000), at.Add(-time.Minute), ""},
		{"threshold 0", mk(wire.TriggerSchedule, "skip", 0), at.Add(24 * time.Hour), ""},
		{"fire_all", mk(wire.TriggerSchedule, "fire_all", 5000), at.Add(time.Hour), ""},
		{"fire_once", mk(wire.TriggerSchedule, "fire_once", 5000), at.Add(time.Hour), ""},
		{"no policy", mk(wire.TriggerSchedule, "", 5000), at.Add(time.Hour), ""},
		{"manual", mk(wire.TriggerManual, "skip", 5000), at.Add(time.Hour), ""},
		{"retry", mk(wire.TriggerRetry, "skip", 5000), at.Add(time.Hour), ""},
		{"parent", mk(wire.TriggerParent, "skip", 5000), at.Add(time.Hour), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			late, msg := expired(c.trig, "w", c.now)
			if late != (c.want != "") || msg != c.want {
				t.Errorf("expired = %v, %q; want %v, %q", late, msg, c.want != "", c.want)
			}
		})
	}
}

// A late catch-up (trigger type misfire) under fire_once runs without a
// question to the schedulers, and is not judged off its slot as one that
// may expire; a late schedule trigger asks.
func TestCatchUpRunsWithoutAsking(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := at.Add(time.Minute)
	trig := &wire.Trigger{RunID: 1, JobID: 2, Group: "g", Handler: "h", TriggerType: wire.TriggerMisfire, ScheduledAt: at,
		MisfirePolicy: policy.MisfireFireOnce, MisfireThresholdMS: 5000}
	if mayExpire(trig, now, "w") {
		t.Error("a late fire_once catch-up may expire: want it to run")
	}
	if f, late := lateness(trig, now, "w"); !late || policy.Decide(f).Outcome != policy.Run {
		t.Errorf("a late fire_once catch-up: late %v, outcome %v; want late, run", late, policy.Decide(f).Outcome)
	}
	trig.TriggerType = wire.TriggerSchedule
	if f, _ := lateness(trig, now, "w"); policy.Decide(f).Outcome != policy.Ask {
		t.Errorf("a late fire_once schedule trigger: outcome %v, want a question", policy.Decide(f).Outcome)
	}
}
