package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/wire"
)

// flowFlags are a job's flow controls (docs/flow-control.md): its
// priority, concurrency key and its cap, rate limits. The server checks
// the key expression and how the fields combine; the flags check what
// they can alone.
type flowFlags struct {
	priority, keyCap   int
	key, rate, keyRate string
}

func (f *flowFlags) register(fl *pflag.FlagSet) {
	fl.IntVar(&f.priority, "priority", 0, "priority of the job's runs waiting at a group or key cap, -100 to 100 (higher first)")
	fl.StringVar(&f.key, "concurrency-key", "", `concurrency key expression over a run's params: params or params.<field>[.<field>...] ("" for none)`)
	fl.IntVar(&f.keyCap, "key-cap", 0, "with --concurrency-key: at most this many runs with the same key at once (0: no cap)")
	fl.StringVar(&f.rate, "rate-limit", "", `at most COUNT starts of the job per PERIOD, e.g. 100/1m ("" for none)`)
	fl.StringVar(&f.keyRate, "key-rate-limit", "", `with --concurrency-key: at most COUNT starts per key per PERIOD, e.g. 5/1s ("" for none)`)
}

// validate checks the flags given.
func (f *flowFlags) validate(changed func(string) bool) error {
	if changed("priority") && (f.priority < wire.PriorityMin || f.priority > wire.PriorityMax) {
		return usagef("--priority %d: want %d to %d", f.priority, wire.PriorityMin, wire.PriorityMax)
	}
	if changed("key-cap") && (f.keyCap < 0 || f.keyCap > wire.MaxConcurrencyLimit) {
		return usagef("--key-cap %d: want 0 (no cap) to %d", f.keyCap, wire.MaxConcurrencyLimit)
	}
	for _, r := range []struct{ flag, val string }{{"rate-limit", f.rate}, {"key-rate-limit", f.keyRate}} {
		if _, err := wire.ParseRate(r.val); changed(r.flag) && err != nil {
			return usagef("--%s: %v", r.flag, err)
		}
	}
	return nil
}

// apply sets the fields whose flags were given.
func (f *flowFlags) apply(changed func(string) bool, spec *apiv1.JobSpec) {
	if changed("priority") {
		spec.Priority = f.priority
	}
	if changed("concurrency-key") {
		spec.ConcurrencyKey = f.key
	}
	if changed("key-cap") {
		spec.KeyCap = f.keyCap
	}
	if changed("rate-limit") {
		spec.RateLimit = f.rate
	}
	if changed("key-rate-limit") {
		spec.KeyRateLimit = f.keyRate
	}
}

// flowDetail adds the job's flow controls that are set to a job's detail.
func flowDetail(k *kv, j *apiv1.Job) {
	if j.Priority != 0 {
		k.add("Priority", strconv.Itoa(j.Priority))
	}
	if j.ConcurrencyKey != "" {
		key := j.ConcurrencyKey
		if j.KeyCap > 0 {
			key += fmt.Sprintf(" (at most %d at once per key)", j.KeyCap)
		}
		k.add("Concurrency key", key)
	}
	if j.RateLimit != "" {
		k.add("Rate limit", j.RateLimit)
	}
	if j.KeyRateLimit != "" {
		k.add("Rate per key", j.KeyRateLimit)
	}
}
