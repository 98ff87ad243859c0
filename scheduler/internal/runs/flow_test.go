package runs_test

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// A run without controls carries no flow; the others carry what applies,
// the key evaluated over the run's params, rates in the order job, key,
// group, a key's rate only with a key.
func TestFlowWire(t *testing.T) {
	var none runs.Flow
	if w := none.Wire(`{"tenant":"acme"}`, 0); w != nil {
		t.Fatalf("no controls: flow %+v, want nil", w)
	}
	minute := time.Minute.Milliseconds()
	for _, c := range []struct {
		name    string
		flow    runs.Flow
		params  string
		maxConc int
		want    *wire.Flow
	}{
		{"priority only: it orders nothing", runs.Flow{Priority: -3}, "", 0, nil},
		{"priority with max_concurrency: it orders the job's slots", runs.Flow{Priority: -3}, "", 2, &wire.Flow{Priority: -3}},
		{"group cap and rate", runs.Flow{GroupCap: 4, GroupRate: wire.Rate{Count: 10, PeriodMS: minute}}, "", 0,
			&wire.Flow{GroupCap: 4, Rates: []wire.Rate{{Scope: wire.RateGroup, Count: 10, PeriodMS: minute}}}},
		{"everything", runs.Flow{Priority: 7, GroupCap: 3, GroupRate: wire.Rate{Count: 50, PeriodMS: minute},
			KeyExpr: "params.tenant", KeyCap: 2, KeyRate: wire.Rate{Count: 5, PeriodMS: 1000}, Rate: wire.Rate{Count: 100, PeriodMS: minute}},
			`{"tenant":"acme"}`, 0,
			&wire.Flow{Priority: 7, GroupCap: 3, Key: "acme", HasKey: true, KeyCap: 2, Rates: []wire.Rate{
				{Scope: wire.RateJob, Count: 100, PeriodMS: minute}, {Scope: wire.RateKey, Count: 5, PeriodMS: 1000},
				{Scope: wire.RateGroup, Count: 50, PeriodMS: minute}}}},
		{"a key evaluating to empty", runs.Flow{KeyExpr: "params.tenant", KeyCap: 1}, `{}`, 0,
			&wire.Flow{HasKey: true, KeyCap: 1}},
		{"a key's rate without a key is none", runs.Flow{Priority: 1, KeyRate: wire.Rate{Count: 5, PeriodMS: 1000}}, "", 0, nil},
		{"a period below the wire's least is raised to it", runs.Flow{Rate: wire.Rate{Count: 5, PeriodMS: 1}}, "", 0,
			&wire.Flow{Rates: []wire.Rate{{Scope: wire.RateJob, Count: 5, PeriodMS: wire.MinRatePeriod.Milliseconds()}}}},
	} {
		if got := c.flow.Wire(c.params, c.maxConc); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: flow %+v, want %+v", c.name, got, c.want)
		}
	}
}

// A job and group without controls produce exactly the trigger they did
// before flows: no flow field in its bytes.
func TestTriggerWithoutFlowUnchanged(t *testing.T) {
	p := runs.Planned{RunID: 1, JobID: 2, Group: "g", Handler: "h", Params: `{"a":1}`, TriggerType: wire.TriggerSchedule,
		ScheduledAt: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), MisfirePolicy: "skip", BlockStrategy: "serial"}
	tr := p.Trigger(time.Second)
	if tr.Flow != nil {
		t.Fatalf("trigger flow %+v, want nil", tr.Flow)
	}
	data, err := wire.EncodeTrigger(tr)
	if err != nil {
		t.Fatal(err)
	}
	if containsFlow(data) {
		t.Fatalf("trigger bytes %s carry a flow", data)
	}
	p.Flow = runs.Flow{KeyExpr: "params.a", KeyCap: 1}
	data, err = wire.EncodeTrigger(p.Trigger(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	back, err := wire.DecodeTrigger(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := (&wire.Flow{Key: "1", HasKey: true, KeyCap: 1}); !reflect.DeepEqual(back.Flow, want) {
		t.Fatalf("decoded flow %+v, want %+v", back.Flow, want)
	}
}

func containsFlow(data []byte) bool { return bytes.Contains(data, []byte(`"flow"`)) }

// Recovery reads a run's flow as the planner wrote it: the job's controls,
// its group's, the key over the run's own params, and a run's own
// priority (a manual trigger's) over its job's.
func TestLoadRebuildsFlow(t *testing.T) {
	f := setup(t)
	if _, err := f.pool.Exec(f.ctx, `UPDATE jobs SET priority = 5, concurrency_key = 'params.tenant', key_cap = 2,
		rate_count = 100, rate_period_ms = 60000, key_rate_count = 5, key_rate_period_ms = 1000 WHERE id = $1`, f.jobID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(f.ctx, `UPDATE job_groups SET max_running = 3, rate_count = 50, rate_period_ms = 60000 WHERE name = 'g'`); err != nil {
		t.Fatal(err)
	}
	plain := f.job("plain")
	acme, own := `{"tenant":"acme"}`, `{"tenant":"own"}`
	a, b := f.fire(0), f.fire(1)
	a.Params, b.Params = &acme, &own
	c := f.fire(2)
	c.JobID = plain
	written := f.plan(a, b, c)
	if _, err := f.pool.Exec(f.ctx, `UPDATE job_runs SET priority = -20 WHERE id = $1`, written[1].RunID); err != nil {
		t.Fatal(err)
	}
	loaded, err := runs.LoadScheduled(f.ctx, f.pool, []int64{written[0].RunID, written[1].RunID, written[2].RunID})
	if err != nil {
		t.Fatal(err)
	}
	minute := time.Minute.Milliseconds()
	rates := []wire.Rate{{Scope: wire.RateJob, Count: 100, PeriodMS: minute}, {Scope: wire.RateKey, Count: 5, PeriodMS: 1000},
		{Scope: wire.RateGroup, Count: 50, PeriodMS: minute}}
	want := map[int64]*wire.Flow{
		written[0].RunID: {Priority: 5, GroupCap: 3, Key: "acme", HasKey: true, KeyCap: 2, Rates: rates},
		written[1].RunID: {Priority: -20, GroupCap: 3, Key: "own", HasKey: true, KeyCap: 2, Rates: rates},
		// The group's controls reach a job without its own.
		written[2].RunID: {GroupCap: 3, Rates: []wire.Rate{{Scope: wire.RateGroup, Count: 50, PeriodMS: minute}}},
	}
	if len(loaded) != 3 {
		t.Fatalf("loaded %d runs, want 3", len(loaded))
	}
	for _, p := range loaded {
		if got := p.Trigger(time.Second).Flow; !reflect.DeepEqual(got, want[p.RunID]) {
			t.Errorf("run %d: flow %+v, want %+v", p.RunID, got, want[p.RunID])
		}
	}

	// Without the group's controls, the job without its own has none.
	if _, err := f.pool.Exec(f.ctx, `UPDATE job_groups SET max_running = 0, rate_count = 0, rate_period_ms = 0 WHERE name = 'g'`); err != nil {
		t.Fatal(err)
	}
	loaded, err = runs.LoadShard(f.ctx, f.pool, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range loaded {
		if p.JobID == plain && p.Trigger(time.Second).Flow != nil {
			t.Errorf("run %d of a job and group without controls: flow %+v, want nil", p.RunID, p.Trigger(time.Second).Flow)
		}
	}
}

// A retry keeps the priority of the run it retries (a manual trigger's
// own), as it keeps its params; a run without one leaves its retry
// without one too (its job's).
func TestRetryKeepsRunPriority(t *testing.T) {
	f := setup(t)
	if _, err := f.pool.Exec(f.ctx, `UPDATE jobs SET max_retries = 1 WHERE id = $1`, f.jobID); err != nil {
		t.Fatal(err)
	}
	written := f.plan(f.fire(0), f.fire(1))
	if _, err := f.pool.Exec(f.ctx, `UPDATE job_runs SET priority = 60 WHERE id = $1`, written[0].RunID); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i, in := range written {
		// Apart, so that their retries' fires (from the end) differ.
		end := now.Add(time.Duration(i) * time.Minute)
		f.apply(runs.Update{RunID: in.RunID, Group: "g", ScheduledAt: in.ScheduledAt, Status: wire.StatusFailed, StartedAt: &now, FinishedAt: &end})
	}
	for i, want := range []*int{ptr(60), nil} {
		var got *int
		if err := f.pool.QueryRow(f.ctx, `SELECT priority FROM job_runs WHERE retry_of = $1`, written[i].RunID).Scan(&got); err != nil {
			t.Fatalf("retry of run %d: %v", written[i].RunID, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("retry of run %d has priority %v, want %v", written[i].RunID, got, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
