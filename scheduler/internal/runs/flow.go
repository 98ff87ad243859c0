package runs

import (
	"github.com/jetjob/jetjob/scheduler/internal/flowkey"
	"github.com/jetjob/jetjob/shared/wire"
)

// Flow is what a run's trigger needs of its job's and its group's flow
// controls (docs/flow-control.md, "Caps, keys, rates and priority"): read
// with the run wherever a Planned is built (the planner's due query,
// plannedSelect, a manual trigger), turned into the trigger's wire.Flow by
// Wire. Its zero value is "no control": such a run's trigger carries no
// flow and is encoded exactly as before.
type Flow struct {
	// Priority is the run's: a manual trigger's own (job_runs.priority),
	// else its job's.
	Priority int
	// GroupCap and GroupRate are the group's (job_groups.max_running,
	// rate_count/rate_period_ms; 0: none).
	GroupCap  int
	GroupRate wire.Rate
	// KeyExpr is the job's concurrency key expression ("" for none),
	// evaluated over the run's params by Wire (package flowkey); KeyCap
	// and KeyRate apply per key.
	KeyExpr string
	KeyCap  int
	KeyRate wire.Rate
	// Rate is the job's own rate limit.
	Rate wire.Rate
}

// IsZero reports whether no control applies.
func (f *Flow) IsZero() bool { return *f == Flow{} }

// Wire is the trigger's flow for a run with params of a job with
// maxConcurrency, nil when no control applies. The key is evaluated only
// when the job has an expression. A priority alone applies nowhere but in
// a queue of slots (a group's or a key's cap, the job's max_concurrency):
// without one it is left out, and the trigger keeps the fast encoding.
func (f *Flow) Wire(params string, maxConcurrency int) *wire.Flow {
	if f.IsZero() || f.GroupCap == 0 && f.KeyExpr == "" && f.Rate.Count == 0 && f.GroupRate.Count == 0 && maxConcurrency == 0 {
		return nil
	}
	w := &wire.Flow{Priority: f.Priority, GroupCap: f.GroupCap}
	if f.KeyExpr != "" {
		w.Key, w.HasKey, w.KeyCap = flowkey.Eval(f.KeyExpr, params), true, f.KeyCap
	}
	// In the order the worker applies them: job, key, group.
	w.Rates = addRate(w.Rates, wire.RateJob, f.Rate)
	if w.HasKey {
		w.Rates = addRate(w.Rates, wire.RateKey, f.KeyRate)
	}
	w.Rates = addRate(w.Rates, wire.RateGroup, f.GroupRate)
	return w
}

// addRate appends r of scope when it limits anything. A period below the
// wire's least (the columns allow it; the API and wire.ParseRate do not)
// is raised to it rather than making a trigger no worker would accept.
func addRate(rs []wire.Rate, scope wire.RateScope, r wire.Rate) []wire.Rate {
	if r.Count <= 0 || r.PeriodMS <= 0 {
		return rs
	}
	r.Scope = scope
	r.PeriodMS = max(r.PeriodMS, wire.MinRatePeriod.Milliseconds())
	return append(rs, r)
}

// FlowColumns are the flow columns of a run r, its job j and its job's
// group g (LEFT JOINed: a group row may be missing), in ScanTargets'
// order.
const FlowColumns = `COALESCE(r.priority, j.priority), COALESCE(g.max_running, 0),
		COALESCE(g.rate_count, 0), COALESCE(g.rate_period_ms, 0),
		j.concurrency_key, j.key_cap, j.key_rate_count, j.key_rate_period_ms, j.rate_count, j.rate_period_ms`

// ScanTargets are the destinations of FlowColumns. The planner, which
// reads jobs rather than runs, scans its own columns of the same order.
func (f *Flow) ScanTargets() []any {
	return []any{&f.Priority, &f.GroupCap, &f.GroupRate.Count, &f.GroupRate.PeriodMS,
		&f.KeyExpr, &f.KeyCap, &f.KeyRate.Count, &f.KeyRate.PeriodMS, &f.Rate.Count, &f.Rate.PeriodMS}
}
