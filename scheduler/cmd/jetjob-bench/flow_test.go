package main

import (
	"strings"
	"testing"

	"github.com/jetjob/jetjob/shared/wire"
)

// The flow flags parse into the controls the jobs and the group get, and
// the result records them.
func TestFlowFlagsParse(t *testing.T) {
	o, err := parseOptions([]string{"--scenario", "steady", "--group-cap", "1000", "--group-rate", "100000/10ms",
		"--job-rate", "10/1s", "--key-cap", "1", "--priority-spread"})
	if err != nil {
		t.Fatal(err)
	}
	f := o.flow
	if f.groupCap != 1000 || f.keyCap != 1 || !f.prioritySpread {
		t.Fatalf("flow flags %+v", f)
	}
	if want := (wire.Rate{Count: 100000, PeriodMS: 10}); f.groupRate != want {
		t.Errorf("group rate %+v, want %+v", f.groupRate, want)
	}
	if want := (wire.Rate{Count: 10, PeriodMS: 1000}); f.jobRate != want {
		t.Errorf("job rate %+v, want %+v", f.jobRate, want)
	}
	c := f.config("steady", "noop")
	want := FlowConfig{GroupCap: 1000, GroupRate: "100000/10ms", JobRate: "10/1s", KeyCap: 1, KeyExpr: "params.k", Priorities: "0-9"}
	if c == nil || *c != want {
		t.Fatalf("config %+v, want %+v", c, want)
	}
	if s := c.String(); !strings.Contains(s, "group cap 1000") || !strings.Contains(s, "group rate 100000/10ms") ||
		!strings.Contains(s, "key cap 1 (key params.k") || !strings.Contains(s, "priorities 0-9") {
		t.Errorf("table line %q", s)
	}
	if got := f.config("steady", "shell").KeyExpr; got != "params" {
		t.Errorf("shell jobs' key expression %q, want params (their params are a command line)", got)
	}
	if f.config("dueread", "noop") != nil || f.config("river", "noop") != nil {
		t.Error("scenarios without the bench's plain jobs record no flow controls")
	}
}

// Without the flags nothing is set, and the result says so.
func TestFlowFlagsUnset(t *testing.T) {
	o, err := parseOptions([]string{"--scenario", "steady"})
	if err != nil {
		t.Fatal(err)
	}
	if o.flow.used() || o.flow.keyExpr("noop") != "" {
		t.Fatalf("no flags, but flow %+v", o.flow)
	}
	c := o.flow.config("steady", "noop")
	if c == nil || *c != (FlowConfig{}) || c.String() != "none" {
		t.Fatalf("config %+v (%q), want empty, printed none", c, c)
	}
	// The default scenarios (steady, dueread) take them: dueread ignores them.
	if _, err := parseOptions([]string{"--group-cap", "10"}); err != nil {
		t.Fatalf("--group-cap with the default scenarios: %v", err)
	}
}

func TestFlowFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--group-cap", "1001"}, "--group-cap 1001: want 1 to 1000"},
		{[]string{"--group-cap", "-1"}, "--group-cap -1"},
		{[]string{"--key-cap", "5000"}, "--key-cap 5000: want 1 to 1000"},
		{[]string{"--group-rate", "100"}, "--group-rate: rate \"100\": want COUNT/PERIOD"},
		{[]string{"--group-rate", "0/1s"}, "--group-rate: rate \"0/1s\": count must be"},
		{[]string{"--group-rate", "10/1ms"}, "--group-rate: rate \"10/1ms\": period"},
		{[]string{"--job-rate", "10/2d"}, "--job-rate: rate \"10/2d\""},
		{[]string{"--job-rate", "5/25h"}, "--job-rate: rate \"5/25h\": period"},
		{[]string{"--scenario", "river", "--group-cap", "10"}, "--group-cap: not for --scenario river"},
		{[]string{"--scenario", "steady,workflow", "--priority-spread"}, "--priority-spread: not for --scenario workflow"},
		{[]string{"--scenario", "river", "--key-cap", "0"}, "--key-cap: not for --scenario river"},
	} {
		_, err := parseOptions(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// The warnings name the controls that may hold runs back at the offered
// rate; loose enough ones give none.
func TestFlowWarnings(t *testing.T) {
	f := flowFlags{groupCap: 1000, groupRateText: "100000/10ms", jobRateText: "100000/10ms"}
	if err := f.check(nil, nil); err != nil {
		t.Fatal(err)
	}
	if w := f.warnings(10000, 512); len(w) != 0 {
		t.Fatalf("loose controls: warnings %q", w)
	}
	f = flowFlags{groupCap: 100, groupRateText: "15000/1s", jobRateText: "1/1s"}
	if err := f.check(nil, nil); err != nil {
		t.Fatal(err)
	}
	w := f.warnings(10000, 512)
	if len(w) != 3 || !strings.Contains(w[0], "--group-cap 100 is below the 512") ||
		!strings.Contains(w[1], "--group-rate 15000/1s at 10000 fires/s: about 67% of the runs may wait up to 1s") ||
		!strings.Contains(w[2], "--job-rate 1/1s at a job's 1 fire/s: about 100% of the runs may wait up to 1s") {
		t.Fatalf("tight controls: warnings %q", w)
	}
	// A job rate of 10/1s: a job's block of 10 ends every 10 s, and its
	// next run may wait (a run asks later or earlier after its fire).
	f = flowFlags{jobRateText: "10/1s"}
	if err := f.check(nil, nil); err != nil {
		t.Fatal(err)
	}
	if w := f.warnings(10000, 512); len(w) != 1 || !strings.Contains(w[0], "about 10% of the runs") {
		t.Fatalf("job rate 10/1s: warnings %q", w)
	}
	f = flowFlags{groupCap: 100, groupRateText: "15000/1s", jobRateText: "1/1s"}
	_ = f.check(nil, nil)
	if w := f.warnings(0, 512); len(w) != 1 {
		t.Fatalf("no steady rate: only the cap's warning, got %q", w)
	}
}
