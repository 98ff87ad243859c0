package spans

import (
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetjob/jetjob/internal/runtrace"
	"github.com/jetjob/jetjob/internal/tracing"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// A workflow run's spans, as jetjob's own provider records them: its
// span is the root of the trace with the ids derived from its run id, a
// re-opened run's next end is a child of it, a node run's publish span
// is a child of it, and a node run's apply span hangs under the worker's
// span when the batch named one span in the trace, else under the
// workflow's.
func TestWorkflowTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := tracing.NewProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(t.Context()) }()
	tr := New(tp)
	const wf, node1, node2 = 40, 41, 42
	traceID, root := runtrace.RunTraceID(wf), runtrace.WorkflowSpanID(wf)

	tr.Published(tr.Publish(&runs.Planned{RunID: node1, WorkflowRun: wf}, "s", runtrace.Header{}), 1, nil)
	start := time.Now().Add(-time.Minute)
	tr.WorkflowsEnded([]WorkflowEnded{{RunID: wf, WorkflowID: 7, Group: "g", Status: "FAILED", Started: start},
		{RunID: 99, Status: "DISCARDED"}})
	tr.WorkflowsEnded([]WorkflowEnded{{RunID: wf, WorkflowID: 7, Group: "g", Status: "SUCCEEDED", Started: time.Now(), Reopened: 1}})

	worker := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled})
	other := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: trace.SpanID{8, 7, 6, 5, 4, 3, 2, 1},
		TraceFlags: trace.FlagsSampled})
	one := tr.Batch()
	one.Message(runtrace.Header{runtrace.HeaderTraceparent: {runtrace.Traceparent(worker)}})
	one.Applied(node1, 1, wf, "SUCCEEDED")
	two := tr.Batch()
	two.Message(runtrace.Header{runtrace.HeaderTraceparent: {runtrace.Traceparent(worker), runtrace.Traceparent(other)}})
	two.Applied(node2, 1, wf, "SUCCEEDED")

	got := exp.GetSpans()
	if len(got) != 5 {
		t.Fatalf("%d spans, want 5 (publish, workflow, reopened, two applies; none for a run that never started)", len(got))
	}
	for _, s := range got {
		if s.SpanContext.TraceID() != traceID {
			t.Errorf("%s in trace %s, want the workflow run's %s", s.Name, s.SpanContext.TraceID(), traceID)
		}
	}
	want := []struct {
		name   string
		span   trace.SpanID // zero: any
		parent trace.SpanID
	}{
		{NamePublish, trace.SpanID{}, root},
		{NameWorkflow, root, trace.SpanID{}},
		{NameWorkflowReopened, trace.SpanID{}, root},
		{NameApply, trace.SpanID{}, worker.SpanID()},
		{NameApply, trace.SpanID{}, root},
	}
	for i, w := range want {
		s := got[i]
		if s.Name != w.name || (w.span.IsValid() && s.SpanContext.SpanID() != w.span) || s.Parent.SpanID() != w.parent {
			t.Errorf("span %d: %s %s under %s, want %s %s under %s", i, s.Name, s.SpanContext.SpanID(), s.Parent.SpanID(),
				w.name, w.span, w.parent)
		}
	}
	if !got[1].StartTime.Equal(start) {
		t.Errorf("workflow span starts %s, want the run's start %s", got[1].StartTime, start)
	}
}
