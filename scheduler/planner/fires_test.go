package planner

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/timing"
	"github.com/jetjob/jetjob/shared/policy"
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
	p := planJob(timing.Plan{Sched: s}, t0, t0, t0.Add(5*time.Second), policy.MisfireSkip, 5*time.Second, 100)
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
	p := planJob(timing.Plan{Sched: s}, t0, now, now.Add(time.Second), policy.MisfireSkip, 5*time.Second, 100)
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
	count := func(p plan, st wire.Status, typ wire.TriggerType) int {
		n := 0
		for _, f := range p.fires {
			if f.status == st && f.typ == typ && f.at.Before(now.Add(-5*time.Second)) {
				n++
			}
		}
		return n
	}
	t.Run("skip", func(t *testing.T) {
		p := planJob(timing.Plan{Sched: s}, t0, now, now.Add(time.Second), policy.MisfireSkip, 5*time.Second, 100)
		if got := count(p, wire.StatusSkipped, wire.TriggerSchedule); got != 15 {
			t.Errorf("%d SKIPPED, want 15", got)
		}
	})
	t.Run("fire_once", func(t *testing.T) {
		p := planJob(timing.Plan{Sched: s}, t0, now, now.Add(time.Second), policy.MisfireFireOnce, 5*time.Second, 100)
		if got := count(p, wire.StatusSkipped, wire.TriggerSchedule); got != 14 {
			t.Errorf("%d SKIPPED, want 14", got)
		}
		if got := count(p, wire.StatusScheduled, wire.TriggerMisfire); got != 1 {
			t.Errorf("%d catch-up runs, want 1", got)
		}
		for _, f := range p.fires {
			if f.typ == wire.TriggerMisfire && !f.at.Equal(t0.Add(14*time.Second)) {
				t.Errorf("catch-up run at %s, want the newest missed fire t0+14s", f.at)
			}
		}
	})
	t.Run("fire_all", func(t *testing.T) {
		p := planJob(timing.Plan{Sched: s}, t0, now, now.Add(time.Second), policy.MisfireFireAll, 5*time.Second, 100)
		if got := count(p, wire.StatusScheduled, wire.TriggerMisfire); got != 15 {
			t.Errorf("%d catch-up runs, want 15", got)
		}
	})
	t.Run("fire_all capped", func(t *testing.T) {
		p := planJob(timing.Plan{Sched: s}, t0, now, now.Add(time.Second), policy.MisfireFireAll, 5*time.Second, 4)
		if got := count(p, wire.StatusScheduled, wire.TriggerMisfire); got != 4 {
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
	p := planJob(timing.Plan{Sched: once}, at, t0, t0.Add(5*time.Second), policy.MisfireSkip, 5*time.Second, 100)
	if len(p.fires) != 1 || !p.fires[0].at.Equal(at) || p.next != nil {
		t.Fatalf("once: fires %+v next %v, want one fire at %s and no next", p.fires, p.next, at)
	}
	delay := mustParse(t, "fix_delay", "1s")
	p = planJob(timing.Plan{Sched: delay}, t0, t0, t0.Add(5*time.Second), policy.MisfireSkip, 5*time.Second, 100)
	if len(p.fires) != 1 || p.next != nil {
		t.Fatalf("fix_delay: fires %+v next %v, want one fire and no next (planned when the run ends)", p.fires, p.next)
	}
}
