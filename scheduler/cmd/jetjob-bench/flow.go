package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/spf13/pflag"
)

// flowFlags are the flow controls (docs/flow-control.md) the bench sets on
// its group and its jobs, so that a run with them can be compared with one
// without: what the controls cost when they are set but hold nothing back
// (issue #33; docs/performance.md, "Pricing the flow controls"). The zero
// value sets none: the jobs and the group are inserted exactly as before.
type flowFlags struct {
	groupCap       int    // job_groups.max_running
	groupRateText  string // job_groups.rate_count/rate_period_ms, COUNT/PERIOD
	jobRateText    string // jobs.rate_count/rate_period_ms
	keyCap         int    // jobs.concurrency_key and key_cap
	prioritySpread bool   // jobs.priority: job id mod 10

	groupRate, jobRate wire.Rate // parsed by check
}

// flowScenarios are the scenarios whose jobs take the flow flags. dueread
// and publish time one statement or the broker alone and ignore them;
// river has no jetjob jobs and workflow's node jobs are not the bench's
// plain jobs: they refuse them.
var flowScenarios = []string{"steady", "sparse", "burst", "max", "overload", "coldstart"}

// priorities is how many priorities --priority-spread gives the jobs:
// job id mod priorities, 0 to 9.
const priorities = 10

func (f *flowFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.groupCap, "group-cap", 0, "the bench group's max_running (1 to 1000; 0: none). To price it without holding runs back, at least --workers × --worker-concurrency (runs in flight never exceed it)")
	fs.StringVar(&f.groupRateText, "group-rate", "", "the bench group's rate_limit, COUNT/PERIOD (e.g. 100000/10ms: the loosest; empty: none)")
	fs.StringVar(&f.jobRateText, "job-rate", "", "every job's rate_limit, COUNT/PERIOD (each job fires once a second: a period under 1s, e.g. 100000/10ms, never holds one back; empty: none)")
	fs.IntVar(&f.keyCap, "key-cap", 0, "every job's concurrency_key (params.k over params {\"k\":\"<job id>\"}; shell: params) with this key_cap (1 to 1000; 0: none)")
	fs.BoolVar(&f.prioritySpread, "priority-spread", false, "give the jobs priorities 0 to 9 (job id mod 10) instead of all 0")
}

// used reports whether any control is set.
func (f *flowFlags) used() bool {
	return f.groupCap != 0 || f.groupRateText != "" || f.jobRateText != "" || f.keyCap != 0 || f.prioritySpread
}

// check validates the flags against the scenarios (fs: which flags were
// given; nil: none) and parses the rates.
func (f *flowFlags) check(fs *pflag.FlagSet, scenarios []string) error {
	for _, name := range []string{"group-cap", "group-rate", "job-rate", "key-cap", "priority-spread"} {
		if fs == nil || !fs.Changed(name) {
			continue
		}
		for _, s := range scenarios {
			if s != "dueread" && s != "publish" && !slices.Contains(flowScenarios, s) {
				return fmt.Errorf("--%s: not for --scenario %s (only %s)", name, s, strings.Join(flowScenarios, ", "))
			}
		}
	}
	if f.groupCap < 0 || f.groupCap > wire.MaxConcurrencyLimit {
		return fmt.Errorf("--group-cap %d: want 1 to %d (0: none)", f.groupCap, wire.MaxConcurrencyLimit)
	}
	if f.keyCap < 0 || f.keyCap > wire.MaxConcurrencyLimit {
		return fmt.Errorf("--key-cap %d: want 1 to %d (0: none)", f.keyCap, wire.MaxConcurrencyLimit)
	}
	var err error
	if f.groupRate, err = wire.ParseRate(strings.TrimSpace(f.groupRateText)); err != nil {
		return fmt.Errorf("--group-rate: %w", err)
	}
	if f.jobRate, err = wire.ParseRate(strings.TrimSpace(f.jobRateText)); err != nil {
		return fmt.Errorf("--job-rate: %w", err)
	}
	return nil
}

// keyExpr is the jobs' concurrency key expression for a handler: a field
// of the params, so that the key is evaluated as a real one would be
// (params read as JSON), except for shell jobs, whose params are their
// command line.
func (f *flowFlags) keyExpr(handler string) string {
	switch {
	case f.keyCap == 0:
		return ""
	case handler == "shell":
		return "params"
	}
	return "params.k"
}

// config is what the result records: nil for scenarios that take no flow
// flags, else the controls set (an empty FlowConfig: none).
func (f *flowFlags) config(scenario, handler string) *FlowConfig {
	if !slices.Contains(flowScenarios, scenario) {
		return nil
	}
	c := &FlowConfig{GroupCap: f.groupCap, KeyCap: f.keyCap, KeyExpr: f.keyExpr(handler)}
	if f.groupRate.Count > 0 {
		c.GroupRate = f.groupRate.String()
	}
	if f.jobRate.Count > 0 {
		c.JobRate = f.jobRate.String()
	}
	if f.prioritySpread {
		c.Priorities = fmt.Sprintf("0-%d", priorities-1)
	}
	return c
}

// warnings say which controls may hold runs back at the offered rate, so
// that a start lag is not read as the controls' cost: perSec is the fires
// offered per second (0: not steady, nothing to say), inFlight the most
// runs the workers can hold at once. A rate gives turns in blocks of its
// count (docs/flow-control.md, "The arithmetic"); once a block is full the
// runs asking within the next period wait, up to a period: about
// perSec × period / count of them. A job's runs come a second apart, so a
// job rate of a shorter period finds its limit idle each time.
func (f *flowFlags) warnings(perSec float64, inFlight int) []string {
	var w []string
	if f.groupCap > 0 && f.groupCap < inFlight {
		w = append(w, fmt.Sprintf("--group-cap %d is below the %d runs the workers may hold at once: runs may wait for its slots", f.groupCap, inFlight))
	}
	if perSec <= 0 {
		return w
	}
	waits := func(r wire.Rate, perSec float64) float64 { return min(1, perSec*r.Period().Seconds()/float64(r.Count)) }
	if r := f.groupRate; r.Count > 0 && waits(r, perSec) > 0.01 {
		w = append(w, fmt.Sprintf("--group-rate %s at %.0f fires/s: about %.0f%% of the runs may wait up to %s for their turn",
			r, perSec, 100*waits(r, perSec), r.Period()))
	}
	if r := f.jobRate; r.Count > 0 && r.Period() >= time.Second && waits(r, 1) > 0.01 {
		w = append(w, fmt.Sprintf("--job-rate %s at a job's 1 fire/s: about %.0f%% of the runs may wait up to %s for their turn",
			r, 100*waits(r, 1), r.Period()))
	}
	return w
}

// setGroup writes the group's limits (the row insert made it with none).
// The schedulers read them with the due jobs, so no API call is needed.
func (f *flowFlags) setGroup(ctx context.Context, pool *pgxpool.Pool) error {
	if f.groupCap == 0 && f.groupRate.Count == 0 {
		return nil
	}
	_, err := pool.Exec(ctx, `UPDATE job_groups SET max_running = $2, rate_count = $3, rate_period_ms = $4 WHERE name = $1`,
		benchGroup, int32(f.groupCap), int32(f.groupRate.Count), f.groupRate.PeriodMS)
	if err != nil {
		return fmt.Errorf("group limits: %w", err)
	}
	return nil
}

// String is the printed table's line: what was set, or "none".
func (c *FlowConfig) String() string {
	var parts []string
	if c.GroupCap > 0 {
		parts = append(parts, fmt.Sprintf("group cap %d", c.GroupCap))
	}
	if c.GroupRate != "" {
		parts = append(parts, "group rate "+c.GroupRate)
	}
	if c.JobRate != "" {
		parts = append(parts, "job rate "+c.JobRate)
	}
	if c.KeyCap > 0 {
		parts = append(parts, fmt.Sprintf("key cap %d (key %s, one key per job)", c.KeyCap, c.KeyExpr))
	}
	if c.Priorities != "" {
		parts = append(parts, "priorities "+c.Priorities)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
