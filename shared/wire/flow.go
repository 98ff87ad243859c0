package wire

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Flow carries the flow controls that apply to one run (docs/flow-control.md):
// its priority, its group's cap, its concurrency key and its rate limits.
// The worker applies them before the run's handler starts, cluster-wide,
// through keys of the JETJOB_LOCKS bucket (worker/internal/joblock). A
// trigger carries nil when none applies, so a run of a job without controls
// is encoded, signed and decoded exactly as before: the controls cost
// nothing where they are not used.
type Flow struct {
	// Priority orders this run among the runs waiting at its group's cap
	// or its key's cap: higher first, then fire order, then run id. A
	// job's own lock (block strategies, max_concurrency) keeps fire order.
	// PriorityMin to PriorityMax; 0 is the default.
	Priority int `json:"priority,omitempty"`
	// GroupCap: at most this many runs of the group execute at once,
	// across all its workers (0: no cap).
	GroupCap int `json:"group_cap,omitempty"`
	// Key is the run's concurrency key: the job's key expression evaluated
	// by the scheduler over the run's params (possibly ""). KeyCap runs of
	// the job with the same key execute at once. KeyCap 0 means the key
	// serves only a rate limit of scope "key".
	Key    string `json:"key,omitempty"`
	HasKey bool   `json:"has_key,omitempty"`
	KeyCap int    `json:"key_cap,omitempty"`
	// Rates limit how many runs start per period, each over its scope; at
	// most one per scope.
	Rates []Rate `json:"rates,omitempty"`
}

// RateScope names what a rate limit counts the starts of.
type RateScope string

const (
	RateJob   RateScope = "job"   // the runs of the job
	RateGroup RateScope = "group" // the runs of every job of the group
	RateKey   RateScope = "key"   // the runs of the job with the run's concurrency key
)

// Rate is a rate limit: at most Count starts in any PeriodMS window of the
// scope (a start that would exceed it waits for its turn).
type Rate struct {
	Scope    RateScope `json:"scope"`
	Count    int       `json:"count"`
	PeriodMS int64     `json:"period_ms"`
}

// Bounds of the flow controls.
const (
	PriorityMin   = -100
	PriorityMax   = 100
	MaxKeyBytes   = 255
	MaxRateCount  = 100000
	MinRatePeriod = 10 * time.Millisecond
	MaxRatePeriod = 24 * time.Hour
)

// Period returns the rate's period.
func (r Rate) Period() time.Duration { return time.Duration(r.PeriodMS) * time.Millisecond }

// ParseRate reads a rate limit written "COUNT/PERIOD" ("100/1m", "5/1s",
// "1/250ms"); the scope is the caller's. "" is no limit: zero Rate, nil.
func ParseRate(s string) (Rate, error) {
	if s == "" {
		return Rate{}, nil
	}
	n, p, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf("rate %q: want COUNT/PERIOD, e.g. 100/1m", s)
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || count < 1 || count > MaxRateCount {
		return Rate{}, fmt.Errorf("rate %q: count must be a whole number from 1 to %d", s, MaxRateCount)
	}
	period, err := time.ParseDuration(strings.TrimSpace(p))
	if err != nil {
		return Rate{}, fmt.Errorf("rate %q: period: %v", s, err)
	}
	r := Rate{Count: count, PeriodMS: period.Milliseconds()}
	if err := r.check(); err != nil {
		return Rate{}, fmt.Errorf("rate %q: %v", s, err)
	}
	return r, nil
}

func (r Rate) check() error {
	if r.Count < 1 || r.Count > MaxRateCount {
		return fmt.Errorf("count %d is out of range (1-%d)", r.Count, MaxRateCount)
	}
	if p := r.Period(); p < MinRatePeriod || p > MaxRatePeriod {
		return fmt.Errorf("period %s is out of range (%s-%s)", p, MinRatePeriod, MaxRatePeriod)
	}
	return nil
}

// validate appends what is wrong with f to errs.
func (f *Flow) validate(errs []string) []string {
	if f.Priority < PriorityMin || f.Priority > PriorityMax {
		errs = append(errs, fmt.Sprintf("flow priority %d is out of range (%d-%d)", f.Priority, PriorityMin, PriorityMax))
	}
	if f.GroupCap < 0 || f.GroupCap > MaxConcurrencyLimit {
		errs = append(errs, fmt.Sprintf("flow group_cap %d is out of range (0-%d)", f.GroupCap, MaxConcurrencyLimit))
	}
	if len(f.Key) > MaxKeyBytes {
		errs = append(errs, fmt.Sprintf("flow key is %d bytes, more than %d", len(f.Key), MaxKeyBytes))
	}
	if f.Key != "" && !f.HasKey {
		errs = append(errs, "flow key is set without has_key")
	}
	if f.KeyCap < 0 || f.KeyCap > MaxConcurrencyLimit {
		errs = append(errs, fmt.Sprintf("flow key_cap %d is out of range (0-%d)", f.KeyCap, MaxConcurrencyLimit))
	}
	if f.KeyCap > 0 && !f.HasKey {
		errs = append(errs, "flow key_cap needs a key")
	}
	seen := map[RateScope]bool{}
	for _, r := range f.Rates {
		switch r.Scope {
		case RateJob, RateGroup:
		case RateKey:
			if !f.HasKey {
				errs = append(errs, "flow rate of scope key needs a key")
			}
		default:
			errs = append(errs, fmt.Sprintf("flow rate scope %q is not job, group or key", r.Scope))
		}
		if seen[r.Scope] {
			errs = append(errs, fmt.Sprintf("flow has two rates of scope %s", r.Scope))
		}
		seen[r.Scope] = true
		if err := r.check(); err != nil {
			errs = append(errs, fmt.Sprintf("flow rate of scope %s: %v", r.Scope, err))
		}
	}
	return errs
}
