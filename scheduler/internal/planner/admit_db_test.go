package planner_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/planner"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// Backpressure (admit.go): while the stages after planning are a MaxLag
// behind, planning waits and writes nothing; the fires that passed their
// misfire threshold meanwhile are shed by the pass that resumes, in its
// one statement (one SKIPPED run for them all, never SCHEDULED ones marked
// later), and a pass under some pressure plans less far ahead.
func TestPlanningWaitsForTheStagesAfterIt(t *testing.T) {
	var lag atomic.Int64 // the applier's lag, ns
	lag.Store(int64(2 * time.Second))
	var signals planner.TestSignals
	signals.Init(t)
	st, pool, p, out := setupDeps(t, planner.Config{Window: 5 * time.Second}, func(d *planner.Deps) {
		d.Pressure = func(context.Context) planner.Pressure { return planner.Pressure{Results: time.Duration(lag.Load())} }
		d.TestSignals = signals
	})
	ctx := context.Background()
	j, err := st.CreateJob(ctx, store.System, everySecond("a")) // misfire policy skip
	if err != nil {
		t.Fatal(err)
	}
	// The job's fires of the last 20 s were never planned.
	var start time.Time
	if err := pool.QueryRow(ctx, `UPDATE jobs SET next_fire_at = date_trunc('second', now()) - interval '20 seconds'
		WHERE id = $1 RETURNING next_fire_at`, j.ID).Scan(&start); err != nil {
		t.Fatal(err)
	}
	run(t, p)

	held := signals.Held.WaitOrTimeout(t, 30*time.Second)
	if held.Results != 2*time.Second {
		t.Errorf("held for %+v, want the applier's 2s", held)
	}
	// Held comes before the pass plans anything, and the pressure stands.
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE job_id = $1`, j.ID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 || len(out.runs) != 0 {
		t.Fatalf("planning held back wrote %d runs and handed over %d, want none", rows, len(out.runs))
	}

	// Halfway to MaxLag: planning resumes, 3.5 s ahead instead of 5 (half
	// way from the window down to the least a pass plans: 2 s, the first
	// pass's interval and one more).
	lag.Store(int64(625 * time.Millisecond))
	pass := signals.ShardPlanned.WaitOrTimeout(t, 30*time.Second)
	if pass.Ahead != 3500*time.Millisecond {
		t.Errorf("resumed pass planned %s ahead, want 3.5s", pass.Ahead)
	}
	var late, scheduled, pastHorizon int
	if err := pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE status = 'SCHEDULED' AND scheduled_at < $2::timestamptz - interval '5 seconds'),
			count(*) FILTER (WHERE status = 'SCHEDULED'),
			count(*) FILTER (WHERE scheduled_at > $2::timestamptz + interval '3.5 seconds')
		FROM job_runs WHERE job_id = $1`, j.ID, pass.At).Scan(&late, &scheduled, &pastHorizon); err != nil {
		t.Fatal(err)
	}
	if late != 0 {
		t.Errorf("%d runs planned SCHEDULED past their misfire threshold, want them shed at planning", late)
	}
	// The job's fires are whole seconds from start: those before At - 5 s
	// are late, the rest up to At + 3.5 s are planned.
	seconds := func(from, to time.Time) int { // whole seconds s, from ≤ s < to
		n := 0
		for s := start; s.Before(to); s = s.Add(time.Second) {
			if !s.Before(from) {
				n++
			}
		}
		return n
	}
	lateBefore := pass.At.Add(-5 * time.Second)
	if runs, fires := skippedFires(t, pool, j.ID); runs != 1 || fires != seconds(start, lateBefore) {
		t.Errorf("%d SKIPPED runs standing for %d fires, want one for the %d fires that passed the 5 s threshold while planning waited",
			runs, fires, seconds(start, lateBefore))
	}
	if want := seconds(lateBefore, pass.At.Add(3500*time.Millisecond+time.Nanosecond)); scheduled != want {
		t.Errorf("%d SCHEDULED runs, want %d: the fires of the last 5 s and of the 3.5 s ahead", scheduled, want)
	}
	if pastHorizon != 0 {
		t.Errorf("%d runs planned more than 3.5 s ahead", pastHorizon)
	}
}

// A group whose workers are behind has its jobs left out of planning,
// those whose policy sheds late fires; its fire_all jobs and every other
// group's are planned as usual.
func TestPlanningLeavesOutGroupsBehind(t *testing.T) {
	var signals planner.TestSignals
	signals.Init(t)
	st, pool, p, _ := setupDeps(t, planner.Config{Window: 5 * time.Second}, func(d *planner.Deps) {
		d.Pressure = func(context.Context) planner.Pressure {
			return planner.Pressure{Groups: map[string]time.Duration{"slow": 3 * time.Second, "g": 100 * time.Millisecond}}
		}
		d.TestSignals = signals
	})
	ctx := context.Background()
	if err := st.EnsureGroup(ctx, store.Group{Name: "slow"}); err != nil {
		t.Fatal(err)
	}
	create := func(group, name, policy string) int64 {
		t.Helper()
		spec := everySecond(name)
		spec.Group, spec.MisfirePolicy = group, policy
		j, err := st.CreateJob(ctx, store.System, spec)
		if err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	fine, held, all := create("g", "fine", "skip"), create("slow", "held", "fire_once"), create("slow", "all", "fire_all")
	run(t, p)
	pass := signals.ShardPlanned.WaitOrTimeout(t, 30*time.Second)
	if len(pass.Behind) != 1 || pass.Behind[0] != "slow" {
		t.Errorf("pass left out %v, want [slow]", pass.Behind)
	}
	for _, c := range []struct {
		job     int64
		what    string
		planned bool
	}{{fine, "group g's job", true}, {held, "group slow's fire_once job", false}, {all, "group slow's fire_all job", true}} {
		if n := countRuns(t, pool, c.job, "SCHEDULED"); (n > 0) != c.planned {
			t.Errorf("%s: %d runs planned, want planned %v", c.what, n, c.planned)
		}
	}
}

// run runs p until the test ends.
func run(t *testing.T, p *planner.Planner) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
