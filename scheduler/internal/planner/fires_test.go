package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/internal/timing"
	"github.com/jetjob/jetjob/shared/schedule"
	"github.com/jetjob/jetjob/shared/wire"
)

func mustParse(t *testing.T, typ, expr string) *schedule.Schedule {
	t.Helper()
	s, err := schedule.Parse(typ, expr, "UTC")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestPlanJobOnTime(t *testing.T) {
	s := mustParse(t, "cron", "@every 1s")
	p := planJob(timing.Plan{Sched: s}, t0, t0, t0.Add(5*time.Second), 0, policy.MisfireSkip, 5*time.Second, 100)
	if len(p.fires) != 6 {
		t.Fatalf("planned %d fires in [t0, t0+5s], want 6", len(p.fires))
	}
	for i, f := range p.fires {
		if want := t0.Add(time.Duration(i) * time.Second); !f.at.Equal(want) || f.status != wire.StatusScheduled || f.typ != wire.TriggerSchedule {
			t.Errorf("fire %d = %+v, want SCHEDULED schedule fire at %s", i, f, want)
		}
	}
	if p.next == nil || !p.next.Equal(t0.Add(6*time.Second)) {
		t.Errorf("next = %v, want t0+6s", p.next)
	}
}

func TestPlanJobLateWithinThresholdFiresNormally(t *testing.T) {
	s := mustParse(t, "cron", "@every 1s")
	now := t0.Add(3 * time.Second) // 3 s late, threshold 5 s
	p := planJob(timing.Plan{Sched: s}, t0, now, now.Add(time.Second), 0, policy.MisfireSkip, 5*time.Second, 100)
	for _, f := range p.fires {
		if f.status != wire.StatusScheduled || f.typ != wire.TriggerSchedule {
			t.Fatalf("fire at %s is %s/%s, want an ordinary SCHEDULED fire", f.at, f.status, f.typ)
		}
	}
	if len(p.fires) != 5 {
		t.Fatalf("planned %d fires, want 5 (t0..t0+4s)", len(p.fires))
	}
}

func TestPlanJobMisfirePolicies(t *testing.T) {
	s := mustParse(t, "cron", "@every 1s")
	now := t0.Add(20 * time.Second) // fires t0 .. t0+14s are more than 5 s late
	// count counts the missed fires of p with status st and type typ,
	// those a SKIPPED run stands for included; runs counts the rows.
	count := func(p plan, st wire.Status, typ wire.TriggerType) (fires, runs int) {
		for _, f := range p.fires {
			if f.status == st && f.typ == typ && f.at.Before(now.Add(-5*time.Second)) {
				runs++
				fires += max(f.skip.n, 1)
			}
		}
		return fires, runs
	}
	t.Run("skip", func(t *testing.T) {
		p := planJob(timing.Plan{Sched: s}, t0, now, now.Add(time.Second), 0, policy.MisfireSkip, 5*time.Second, 100)
		if fires, runs := count(p, wire.StatusSkipped, wire.TriggerSchedule); fires != 15 || runs != 1 {
			t.Errorf("%d SKIPPED fires in %d runs, want 15 in one", fires, runs)
		}
		assertRange(t, p.fires[0], 15, t0, t0.Add(14*time.Second), "")
	})
	t.Run("fire_once", func(t *testing.T) {
		p := planJob(timing.Plan{Sched: s}, t0, now, now.Add(time.Second), 0, policy.MisfireFireOnce, 5*time.Second, 100)
		if fires, runs := count(p, wire.StatusSkipped, wire.TriggerSchedule); fires != 14 || runs != 1 {
			t.Errorf("%d SKIPPED fires in %d runs, want 14 in one", fires, runs)
		}
		assertRange(t, p.fires[0], 14, t0, t0.Add(13*time.Second), "the newest missed fire, 2026-05-01T12:00:14Z, runs instead")
		if got, _ := count(p, wire.StatusScheduled, wire.TriggerMisfire); got != 1 {
			t.Errorf("%d catch-up runs, want 1", got)
		}
		for _, f := range p.fires {
			if f.typ == wire.TriggerMisfire && !f.at.Equal(t0.Add(14*time.Second)) {
				t.Errorf("catch-up run at %s, want the newest missed fire t0+14s", f.at)
			}
		}
	})
	t.Run("fire_all", func(t *testing.T) {
		p := planJob(timing.Plan{Sched: s}, t0, now, now.Add(time.Second), 0, policy.MisfireFireAll, 5*time.Second, 100)
		if got, _ := count(p, wire.StatusScheduled, wire.TriggerMisfire); got != 15 {
			t.Errorf("%d catch-up runs, want 15", got)
		}
		if p.overflow {
			t.Error("overflow reported under the cap")
		}
	})
	t.Run("fire_all capped", func(t *testing.T) {
		p := planJob(timing.Plan{Sched: s}, t0, now, now.Add(time.Second), 0, policy.MisfireFireAll, 5*time.Second, 4)
		if got, _ := count(p, wire.StatusScheduled, wire.TriggerMisfire); got != 4 {
			t.Errorf("%d catch-up runs, want the cap of 4", got)
		}
		if !p.overflow {
			t.Error("overflow not reported")
		}
		// The schedule resumes at the threshold, not at the fifth missed fire.
		for _, f := range p.fires {
			if f.typ == wire.TriggerSchedule && f.status == wire.StatusScheduled && f.at.Before(now.Add(-5*time.Second)) {
				t.Errorf("ordinary fire at %s is older than the threshold", f.at)
			}
		}
	})
}

func TestPlanJobOnceAndFixDelayPlanOneFire(t *testing.T) {
	at := t0.Add(2 * time.Second)
	once := mustParse(t, "once", at.Format(time.RFC3339))
	p := planJob(timing.Plan{Sched: once}, at, t0, t0.Add(5*time.Second), 0, policy.MisfireSkip, 5*time.Second, 100)
	if len(p.fires) != 1 || !p.fires[0].at.Equal(at) || p.next != nil {
		t.Fatalf("once: fires %+v next %v, want one fire at %s and no next", p.fires, p.next, at)
	}
	delay := mustParse(t, "fix_delay", "1s")
	p = planJob(timing.Plan{Sched: delay}, t0, t0, t0.Add(5*time.Second), 0, policy.MisfireSkip, 5*time.Second, 100)
	if len(p.fires) != 1 || p.next != nil {
		t.Fatalf("fix_delay: fires %+v next %v, want one fire and no next (planned when the run ends)", p.fires, p.next)
	}
}

// A daily fire_once job re-enabled after 200 days runs its newest missed
// fire (yesterday's), not the cap-th oldest, and the fires past the cap are
// one SKIPPED run that says how many and which range.
func TestPlanJobFireOncePastCapRunsNewest(t *testing.T) {
	daily := timing.Plan{Sched: mustParse(t, "cron", "0 0 0 * * *")}
	now := time.Date(2026, 5, 1, 9, 30, 0, 0, time.UTC)
	first := time.Date(2025, 10, 13, 0, 0, 0, 0, time.UTC) // 201 midnights up to 2026-05-01: 10 + 190 + 1
	p := planJob(daily, first, now, now.Add(5*time.Second), 0, policy.MisfireFireOnce, 5*time.Second, 10)
	var ran, skipped []fire
	for _, f := range p.fires {
		switch {
		case f.typ == wire.TriggerMisfire:
			ran = append(ran, f)
		case f.status == wire.StatusSkipped:
			skipped = append(skipped, f)
		}
	}
	if want := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC); len(ran) != 1 || !ran[0].at.Equal(want) {
		t.Fatalf("ran %+v, want one catch-up run of the newest missed fire %s", ran, want)
	}
	if len(skipped) != 1 {
		t.Fatalf("%d SKIPPED runs, want one for the 10 of the cap and the 190 past it", len(skipped))
	}
	assertRange(t, skipped[0], 200, first, time.Date(2026, 4, 30, 0, 0, 0, 0, time.UTC),
		"the newest missed fire, 2026-05-01T00:00:00Z, runs instead")
	if p.overflow {
		t.Error("overflow reported for fire_once: every fire past the cap is accounted for as the policy says")
	}
	for i := 1; i < len(p.fires); i++ {
		if !p.fires[i].at.After(p.fires[i-1].at) {
			t.Fatalf("fires out of order at %d: %s after %s", i, p.fires[i].at, p.fires[i-1].at)
		}
	}
	if p.next == nil || !p.next.Equal(time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("next = %v, want the next midnight", p.next)
	}
}

// Jobs with end_at stop: no fire after it, and no next fire.
func TestPlanJobStopsAtEnd(t *testing.T) {
	end := t0.Add(2500 * time.Millisecond)
	tp := timing.Plan{Sched: mustParse(t, "cron", "@every 1s"), End: end}
	p := planJob(tp, t0, t0, t0.Add(5*time.Second), 0, policy.MisfireSkip, 5*time.Second, 100)
	if len(p.fires) != 3 || p.next != nil {
		t.Fatalf("fires %+v next %v, want 3 fires up to end_at and no next", p.fires, p.next)
	}
}

// assertRange checks that f is a SKIPPED run standing for n missed fires
// from first to last, and that its message says so (policy.ParseSkipped)
// and contains also.
func assertRange(t *testing.T, f fire, n int, first, last time.Time, also string) {
	t.Helper()
	if f.status != wire.StatusSkipped || !f.at.Equal(first) || f.skip.n != n || !f.skip.last.Equal(last) {
		t.Errorf("run %+v, want SKIPPED at %s standing for %d fires up to %s", f, first, n, last)
	}
	pn, exact, pf, pl, ok := policy.ParseSkipped(f.message)
	if !ok || pn != n || !exact || !pf.Equal(first) || !pl.Equal(last) {
		t.Errorf("message %q reads %d (exact %v) from %s to %s (ok %v), want %d from %s to %s", f.message, pn, exact, pf, pl, ok, n, first, last)
	}
	if !strings.Contains(f.message, also) {
		t.Errorf("message %q lacks %q", f.message, also)
	}
}

// A fire that will be late when a worker can take it (now plus the wait
// the stages after planning make a trigger published now wait) is shed
// at planning; those that will still be on time are planned as usual.
func TestPlanJobShedsFiresLateByPickUp(t *testing.T) {
	s := mustParse(t, "cron", "@every 1s")
	now := t0.Add(5 * time.Second) // t0 .. t0+5s are due, none late yet
	p := planJob(timing.Plan{Sched: s}, t0, now, now.Add(time.Second), 2*time.Second, policy.MisfireSkip, 5*time.Second, 100)
	if len(p.fires) == 0 {
		t.Fatal("no fires planned")
	}
	// Picked up at t0+7s: t0 and t0+1s are more than 5 s late then.
	assertRange(t, p.fires[0], 2, t0, t0.Add(time.Second), "misfire policy skip")
	for _, f := range p.fires[1:] {
		if f.status != wire.StatusScheduled || f.typ != wire.TriggerSchedule || f.at.Before(t0.Add(2*time.Second)) {
			t.Errorf("fire %+v, want ordinary SCHEDULED fires from t0+2s on", f)
		}
	}
	if n := len(p.fires) - 1; n != 5 {
		t.Errorf("%d fires planned, want t0+2s .. t0+6s", n)
	}
}
