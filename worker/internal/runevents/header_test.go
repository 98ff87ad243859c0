package runevents

import (
	"slices"
	"testing"

	"github.com/jetjob/jetjob/internal/runtrace"
)

// An events message names each run's span once, whatever the number of
// its events in the batch, and has no header when no run is traced.
func TestHeaderOnePerRun(t *testing.T) {
	const a, b = "00-000000000000000165f4c1a82caa536f-00f067aa0ba902b7-01", "00-00000000000000023e09cdc579d07102-53ce929d0e0e4736-01"
	batch := []*pending{{traceparent: a}, {traceparent: ""}, {traceparent: b}, {traceparent: a}}
	if got := header(batch)[runtrace.HeaderTraceparent]; !slices.Equal(got, []string{a, b}) {
		t.Errorf("traceparent values %q, want %q", got, []string{a, b})
	}
	if h := header([]*pending{{}, {}}); h != nil {
		t.Errorf("header %v for untraced runs, want none", h)
	}
	if got := runtrace.Parents(header(batch)); len(got) != 2 || got[runtrace.RunTraceID(1)].SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("parents read back %v, want run 1's and run 2's", got)
	}
}
