package api

import (
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/flowkey"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// A job's flow controls (docs/flow-control.md, "Caps, keys, rates and
// priority"): priority, concurrency key and its cap, rate limits.

// checkJobFlow validates the flow fields of a spec and returns them as the
// store keeps them.
func checkJobFlow(spec apiv1.JobSpec, add func(string, ...any)) store.JobFlow {
	f := store.JobFlow{Priority: spec.Priority, ConcurrencyKey: spec.ConcurrencyKey, KeyCap: spec.KeyCap}
	if spec.Priority < wire.PriorityMin || spec.Priority > wire.PriorityMax {
		add("priority %d: want %d to %d (higher runs first)", spec.Priority, wire.PriorityMin, wire.PriorityMax)
	}
	if spec.ConcurrencyKey != "" {
		if err := flowkey.Parse(spec.ConcurrencyKey); err != nil {
			add("concurrency_key: %v", err)
		}
	}
	if spec.KeyCap < 0 || spec.KeyCap > wire.MaxConcurrencyLimit {
		add("key_cap %d: want 0 (no cap) to %d", spec.KeyCap, wire.MaxConcurrencyLimit)
	}
	var err error
	if f.Rate, err = wire.ParseRate(spec.RateLimit); err != nil {
		add("rate_limit: %v", err)
	}
	if f.KeyRate, err = wire.ParseRate(spec.KeyRateLimit); err != nil {
		add("key_rate_limit: %v", err)
	}
	if spec.ConcurrencyKey == "" {
		if spec.KeyCap != 0 {
			add("key_cap needs a concurrency_key (the runs with the same key share the cap)")
		}
		if spec.KeyRateLimit != "" {
			add("key_rate_limit needs a concurrency_key (the runs with the same key share the limit)")
		}
	}
	return f
}

// jobFlowDoc sets d's flow fields from j's.
func jobFlowDoc(d *apiv1.Job, j store.Job) {
	f := j.Flow
	d.Priority, d.ConcurrencyKey, d.KeyCap = f.Priority, f.ConcurrencyKey, f.KeyCap
	d.RateLimit, d.KeyRateLimit = f.Rate.String(), f.KeyRate.String()
}
