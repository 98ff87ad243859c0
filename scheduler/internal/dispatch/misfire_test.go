package dispatch

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// planned is the run dispatch is handed (the only mention of its type in
// these tests).
type planned = runs.Planned

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// scheduled is a planned schedule fire of job at at under policy mp.
func scheduled(id, job int64, at time.Time, mp policy.Misfire) planned {
	return planned{RunID: id, JobID: job, Group: "g", TriggerType: wire.TriggerSchedule, ScheduledAt: at, MisfirePolicy: mp}
}

func newDispatcher(t *testing.T, cfg Config) *Dispatcher {
	t.Helper()
	d, err := New(cfg, Deps{Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Runs dispatch publishes more than the threshold after their time (NATS
// was down) follow their job's misfire policy: skip skips them, fire_once
// runs only each job's newest late fire in the batch, fire_all runs all.
// The job's own threshold wins over the scheduler's; a fire exactly at the
// threshold is on time.
func TestMisfiredAppliesThePolicyToLateRuns(t *testing.T) {
	d := newDispatcher(t, Config{MisfireThreshold: 5 * time.Second})
	now := t0
	late := func(d time.Duration) time.Time { return now.Add(-d) }
	ownThreshold := func(r planned, th time.Duration) planned { r.MisfireThreshold = th; return r }
	runs := []planned{
		scheduled(1, 1, late(10*time.Second), policy.MisfireSkip),
		scheduled(2, 1, late(3*time.Second), policy.MisfireSkip),
		scheduled(3, 1, late(5*time.Second), policy.MisfireSkip), // exactly the threshold: on time
		scheduled(12, 2, late(10*time.Second), policy.MisfireFireOnce),
		scheduled(10, 2, late(30*time.Second), policy.MisfireFireOnce),
		scheduled(11, 2, late(20*time.Second), policy.MisfireFireOnce),
		scheduled(13, 2, late(time.Second), policy.MisfireFireOnce), // on time: runs, not a missed fire
		scheduled(20, 3, late(time.Hour), policy.MisfireFireAll),
		scheduled(21, 3, late(time.Minute), policy.MisfireFireAll),
		ownThreshold(scheduled(30, 4, late(30*time.Second), policy.MisfireSkip), time.Minute),
		ownThreshold(scheduled(31, 5, late(2*time.Second), policy.MisfireSkip), time.Second),
		scheduled(40, 6, late(time.Hour), policy.MisfireFireOnce),
	}
	skip := d.misfired(runs, now)

	want := map[int64]string{
		1:  "late by 10s when it could be published, skipped (misfire policy skip)",
		10: "late by 30s when it could be published, skipped: a later missed fire ran instead (misfire policy fire_once)",
		11: "late by 20s when it could be published, skipped: a later missed fire ran instead (misfire policy fire_once)",
		31: "late by 2s when it could be published, skipped (misfire policy skip)",
	}
	for id, msg := range want {
		if got, ok := skip[id]; !ok || !strings.Contains(got, msg) {
			t.Errorf("run %d: skipped %v with %q, want skipped with %q", id, ok, got, msg)
		}
	}
	for id := range skip {
		if _, ok := want[id]; !ok {
			t.Errorf("run %d skipped (%q), want it published", id, skip[id])
		}
	}
}

// Only schedule fires this process planned are judged: a recovered run may
// have been published by the shard's previous owner (its worker judges it),
// the planner's catch-up runs (misfire) were judged when planned, and
// manual, retry and child runs are not fires of a schedule. With no
// threshold at all nothing is late.
func TestMisfiredExemptions(t *testing.T) {
	d := newDispatcher(t, Config{MisfireThreshold: 5 * time.Second})
	recovered := scheduled(1, 1, t0.Add(-time.Hour), policy.MisfireSkip)
	recovered.Recovered = true
	runs := []planned{recovered}
	for i, typ := range []wire.TriggerType{wire.TriggerManual, wire.TriggerRetry, wire.TriggerParent, wire.TriggerMisfire} {
		r := scheduled(int64(10+i), 2, t0.Add(-time.Hour), policy.MisfireSkip)
		r.TriggerType = typ
		runs = append(runs, r)
	}
	if skip := d.misfired(runs, t0); len(skip) != 0 {
		t.Errorf("skipped %v, want every exempt run published", skip)
	}

	off := newDispatcher(t, Config{})
	if skip := off.misfired([]planned{scheduled(1, 1, t0.Add(-time.Hour), policy.MisfireSkip)}, t0); len(skip) != 0 {
		t.Errorf("threshold 0: skipped %v, want the misfire check off", skip)
	}
}

// A lone run goes to the worker routing picked, else to its group's shared
// queue.
func TestSubject(t *testing.T) {
	r := planned{RunID: 1, Group: "billing"}
	if got := Subject(&r); got != "jetjob.trigger.billing.any" {
		t.Errorf("untargeted run: %q, want the shared queue", got)
	}
	r.Target = "w7"
	if got := Subject(&r); got != "jetjob.trigger.billing.w.w7" {
		t.Errorf("run for w7: %q, want w7's directed subject", got)
	}
}
