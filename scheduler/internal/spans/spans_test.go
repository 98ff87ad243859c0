package spans

import (
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/jetjob/jetjob/internal/runtrace"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// With tracing off (no provider installed, or a noop one) the hot path's
// calls allocate nothing and write no header.
func TestOffCostsNothing(t *testing.T) {
	for _, tr := range []*Tracer{New(nil), New(noop.NewTracerProvider())} {
		if tr != nil {
			t.Fatal("tracer built without a recording provider")
		}
		r := &runs.Planned{RunID: 7, JobID: 1, Group: "g"}
		h := runtrace.Header{}
		allocs := testing.AllocsPerRun(100, func() {
			tr.Published(tr.Publish(r, "jetjob.trigger.g.any", h), 1, nil)
			b := tr.Batch()
			b.Message(h)
			b.Writing()
			b.Applied(7, 1, 0, "SUCCEEDED")
		})
		if allocs != 0 || len(h) != 0 {
			t.Errorf("tracing off: %v allocations per run, header %v; want none", allocs, h)
		}
	}
}
