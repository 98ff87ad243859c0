package scheduler_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/runtrace"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/internal/tracing"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
)

// rawSubscription sees every message on subject as NATS carries it,
// headers included, beside JetStream's consumers.
func rawSubscription(t *testing.T, sys *system, subject string) *nats.Subscription {
	t.Helper()
	nc := sys.connect(t)
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return sub
}

// firstSucceeded waits for the job's first SUCCEEDED run.
func firstSucceeded(t *testing.T, sys *system, jobID int64) apiv1.Run {
	t.Helper()
	var run apiv1.Run
	testwait.Eventually(t, 30*time.Second, "a SUCCEEDED run", func() bool {
		l, err := sys.api.ListRuns(context.Background(), jobID, client.ListRunsOptions{Limit: 50})
		if err != nil {
			return false
		}
		for _, r := range l.Runs {
			if r.Status == "SUCCEEDED" {
				run = r
			}
		}
		return run.ID != 0
	})
	return run
}

// installTracer installs a process-wide tracer provider recording every
// span in the exporter it returns, until the test ends: call it before
// startSystem, so that the system stops first (cleanups run last first)
// and its last spans are recorded. A test that calls it cannot be
// parallel.
func installTracer(t *testing.T) *tracetest.InMemoryExporter {
	exp := tracetest.NewInMemoryExporter()
	tp := tracing.NewProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})
	return exp
}

// With a tracer provider installed, a fire is one trace, found from its
// run id: the scheduler's publish (its root, linked to the planning batch),
// the worker's wait in JetStream, pick-up, lock wait and handler, the
// handler's own span, and the scheduler applying the results, each under
// the right parent; the trigger carries the context as a traceparent
// header, and the worker's log lines about the run carry the trace id.
//
// Not parallel: it installs the process-wide tracer provider, which would
// turn trigger batches off for the schedulers of the tests beside it and
// record their spans, whose trace ids (from run ids, which each test's
// database numbers from 1) can equal this test's.
func TestTracingOneTracePerRun(t *testing.T) {
	exp := installTracer(t)
	obs, logs := observer.New(zapcore.InfoLevel)
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("traced", func(ctx context.Context, j *worker.Job) error {
			_, span := otel.Tracer("user").Start(ctx, "user.work")
			defer span.End()
			j.Logger.Info("working")
			return nil
		})
	}, func(c *systemConfig) {
		c.Logger = zap.New(zapcore.NewTee(c.Logger.Core(), obs))
	})
	triggers := rawSubscription(t, sys, "jetjob.trigger.g.>")
	events := rawSubscription(t, sys, "jetjob.event.g")
	ctx := context.Background()
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "traced", Handler: "traced",
		ScheduleType: "cron", ScheduleExpr: "@every 1s"})
	run := firstSucceeded(t, sys, job.ID)
	traceID := runtrace.RunTraceID(run.ID)

	// The apply span of SUCCEEDED ends just after the commit the API read.
	// (A started event applied with its finished one, in one batch, is
	// one change, to SUCCEEDED: one apply span.)
	var spans tracetest.SpanStubs
	byName := map[string][]tracetest.SpanStub{}
	testwait.Eventually(t, 10*time.Second, fmt.Sprintf("run %d's apply span", run.ID), func() bool {
		spans, byName = nil, map[string][]tracetest.SpanStub{}
		for _, s := range exp.GetSpans() {
			if s.SpanContext.TraceID() == traceID {
				spans = append(spans, s)
				byName[s.Name] = append(byName[s.Name], s)
			}
		}
		for _, a := range byName["jetjob.apply"] {
			if attr(a, runtrace.AttrStatus) == "SUCCEEDED" {
				return true
			}
		}
		return false
	})
	one := func(name string) tracetest.SpanStub {
		t.Helper()
		if got := byName[name]; len(got) != 1 {
			t.Fatalf("%d %s spans in run %d's trace, want 1; the trace: %s", len(got), name, run.ID, describe(spans))
		}
		return byName[name][0]
	}
	publish, wait, pickup := one("jetjob.publish"), one("jetjob.wait"), one("jetjob.run")
	lock, handler, user := one("jetjob.lock"), one("jetjob.handler"), one("user.work")
	childOf := func(child, parent tracetest.SpanStub) {
		t.Helper()
		if child.Parent.SpanID() != parent.SpanContext.SpanID() {
			t.Errorf("%s's parent is %s, want %s (%s); the trace: %s", child.Name, child.Parent.SpanID(),
				parent.Name, parent.SpanContext.SpanID(), describe(spans))
		}
	}
	if publish.Parent.IsValid() {
		t.Errorf("publish span has parent %s, want it to be the trace's root", publish.Parent.SpanID())
	}
	childOf(wait, publish)
	childOf(pickup, publish)
	childOf(lock, pickup)
	childOf(handler, pickup)
	childOf(user, handler)
	statuses := map[string]bool{}
	for _, a := range byName["jetjob.apply"] {
		childOf(a, pickup)
		statuses[attr(a, runtrace.AttrStatus)] = true
	}
	if len(statuses) != len(byName["jetjob.apply"]) || (len(statuses) == 2 && !statuses["RUNNING"]) {
		t.Errorf("apply spans for statuses %v, want one per status change: SUCCEEDED, maybe RUNNING before", statuses)
	}
	if got := attr(pickup, runtrace.AttrStatus); got != "SUCCEEDED" {
		t.Errorf("pick-up span status attribute %q, want SUCCEEDED", got)
	}
	// The wait is the trigger's time in JetStream: from its stored time
	// (the publish) to the pick-up's start.
	if !wait.EndTime.Equal(pickup.StartTime) || wait.StartTime.After(wait.EndTime) ||
		wait.StartTime.Before(publish.StartTime.Add(-time.Second)) {
		t.Errorf("wait %s–%s, publish from %s, pick-up from %s: want the wait from the publish to the pick-up",
			wait.StartTime, wait.EndTime, publish.StartTime, pickup.StartTime)
	}
	// The publish links to the planning batch that made the run.
	if len(publish.Links) != 1 {
		t.Fatalf("publish span has %d links, want 1 (its planning batch)", len(publish.Links))
	}
	planned := false
	for _, s := range exp.GetSpans() {
		if s.Name == "jetjob.plan" && s.SpanContext.SpanID() == publish.Links[0].SpanContext.SpanID() {
			planned = attr(s, runtrace.AttrRuns) != "" && s.SpanContext.TraceID() != traceID
		}
	}
	if !planned {
		t.Errorf("publish span's link %s names no planning batch span", publish.Links[0].SpanContext.SpanID())
	}

	// On the wire: the trigger's traceparent names the publish span; the
	// events of the run name the worker's pick-up.
	for seen := false; !seen; {
		m, err := triggers.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("run %d's trigger not seen: %v", run.ID, err)
		}
		trig, err := wire.DecodeTrigger(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		if seen = trig.RunID == run.ID; seen {
			sc := trace.SpanContextFromContext(runtrace.Extract(ctx, m.Header))
			if sc.TraceID() != traceID || sc.SpanID() != publish.SpanContext.SpanID() {
				t.Errorf("trigger header %v: want traceparent of trace %s, span %s", m.Header, traceID, publish.SpanContext.SpanID())
			}
		}
	}
	for seen := false; !seen; {
		m, err := events.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("run %d's events not seen: %v", run.ID, err)
		}
		evs, err := wire.DecodeEvents(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.RunID == run.ID {
				seen = true
				if sc := runtrace.Parents(m.Header)[traceID]; sc.SpanID() != pickup.SpanContext.SpanID() {
					t.Errorf("events message header %v: want a traceparent naming span %s", m.Header, pickup.SpanContext.SpanID())
				}
			}
		}
	}

	// Log lines about the run find its trace.
	for _, msg := range []string{"working", "run finished"} {
		entries := logs.FilterMessage(msg).FilterField(logging.Run(run.ID)).All()
		if len(entries) == 0 {
			t.Fatalf("no %q log line for run %d", msg, run.ID)
		}
		if got := entries[0].ContextMap()[logging.KeyTrace]; got != traceID.String() {
			t.Errorf("%q log line has trace_id %v, want %s", msg, got, traceID)
		}
	}
}

// Without a tracer provider, nothing about tracing reaches the wire or
// the logs: triggers and events carry no traceparent header.
func TestTracingOffWritesNoHeader(t *testing.T) {
	t.Parallel()
	obs, logs := observer.New(zapcore.InfoLevel)
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("plain", func(context.Context, *worker.Job) error { return nil })
	}, func(c *systemConfig) {
		c.Logger = zap.New(zapcore.NewTee(c.Logger.Core(), obs))
	})
	triggers := rawSubscription(t, sys, "jetjob.trigger.g.>")
	events := rawSubscription(t, sys, "jetjob.event.g")
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "plain", Handler: "plain", ScheduleType: "none"})
	run := trigger(t, sys.api, job.ID, nil)
	m, err := triggers.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no trigger seen: %v", err)
	}
	if len(m.Header[runtrace.HeaderTraceparent]) > 0 || len(m.Header[runtrace.HeaderTracestate]) > 0 {
		t.Errorf("trigger with tracing off has header %v, want no trace context", m.Header)
	}
	for finished := false; !finished; {
		m, err := events.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("no finished event seen: %v", err)
		}
		if len(m.Header[runtrace.HeaderTraceparent]) > 0 {
			t.Errorf("events message with tracing off has header %v, want no trace context", m.Header)
		}
		evs, err := wire.DecodeEvents(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			finished = finished || (e.RunID == run.ID && e.Kind == wire.EventFinished)
		}
	}
	testwait.Eventually(t, 10*time.Second, "the run's log line", func() bool {
		return logs.FilterMessage("run finished").FilterField(logging.Run(run.ID)).Len() > 0
	})
	if e := logs.FilterMessage("run finished").FilterField(logging.Run(run.ID)).All()[0]; e.ContextMap()[logging.KeyTrace] != nil {
		t.Errorf("log line with tracing off has trace_id %v", e.ContextMap()[logging.KeyTrace])
	}
}

func attr(s tracetest.SpanStub, k attribute.Key) string {
	for _, a := range s.Attributes {
		if a.Key == k {
			return a.Value.String()
		}
	}
	return ""
}

func describe(spans tracetest.SpanStubs) string {
	out := ""
	for _, s := range spans {
		out += fmt.Sprintf("\n  %s span=%s parent=%s", s.Name, s.SpanContext.SpanID(), s.Parent.SpanID())
	}
	return out
}

// A workflow run is one trace, found from its run id: the workflow run's
// span is its root (recorded when the run ends, from its start), and
// every node run — the fan-out's two branches and each for_each item —
// has its publish span as that span's child, the worker's spans under
// it, and the scheduler's apply spans in the same trace.
//
// Not parallel, as TestTracingOneTracePerRun.
func TestTracingOneTracePerWorkflowRun(t *testing.T) {
	exp := installTracer(t)
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("tr-list", func(_ context.Context, j *worker.Job) error {
			return j.SetOutput(map[string]any{"items": []int{1, 2, 3}})
		})
		w.Handle("tr-noop", func(context.Context, *worker.Job) error { return nil })
	})
	wfJob(t, sys, "list", "tr-list")
	wfJob(t, sys, "noop", "tr-noop")
	wf := createWorkflow(t, sys, apiv1.WorkflowSpec{Name: "traced", Nodes: []apiv1.WorkflowNode{
		{Name: "list", Job: "g/list"},
		{Name: "each", Job: "g/noop", ForEach: "nodes.list.output.items", Params: str("{{ .item }}")},
		{Name: "side", Job: "g/noop"},
	}, Edges: []apiv1.WorkflowEdge{{From: "list", To: "each"}, {From: "list", To: "side"}}})
	started, err := sys.api.TriggerWorkflow(t.Context(), wf.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := waitWorkflowRun(t, sys, started.ID, "SUCCEEDED")
	traceID, rootID := runtrace.RunTraceID(done.ID), runtrace.WorkflowSpanID(done.ID)
	nodeRuns := map[int64]string{}
	for _, n := range done.Nodes {
		for _, r := range n.Runs {
			nodeRuns[r.RunID] = n.Name
		}
	}
	if len(nodeRuns) != 5 {
		t.Fatalf("%d node runs, want 5 (list, three items of each, side): %s", len(nodeRuns), describeNodes(done))
	}

	// The workflow span is recorded after the commit that ended the run,
	// and the last apply span with it.
	var spans tracetest.SpanStubs
	testwait.Eventually(t, 10*time.Second, "the workflow run's span", func() bool {
		spans = nil
		root := false
		for _, s := range exp.GetSpans() {
			if s.SpanContext.TraceID() == traceID {
				spans = append(spans, s)
				root = root || s.Name == "jetjob.workflow"
			}
		}
		return root
	})
	// A run may be published more than once — the shard's recovery or
	// sweep re-publishes a run still SCHEDULED, and the stream drops the
	// copy by its Msg-Id — so a run may have several publish spans: each
	// is under the workflow's, and the worker's is under one of them.
	publishes, runSpans := map[int64][]tracetest.SpanStub{}, map[int64]tracetest.SpanStub{}
	for _, s := range spans {
		id, _ := strconv.ParseInt(attr(s, runtrace.AttrRunID), 10, 64)
		switch s.Name {
		case "jetjob.workflow":
			if s.SpanContext.SpanID() != rootID || s.Parent.IsValid() {
				t.Errorf("workflow span %s with parent %s, want span %s as the trace's root", s.SpanContext.SpanID(), s.Parent.SpanID(), rootID)
			}
			if attr(s, runtrace.AttrStatus) != "SUCCEEDED" || s.StartTime.After(s.EndTime) {
				t.Errorf("workflow span: status %q, %s–%s; want SUCCEEDED over the run", attr(s, runtrace.AttrStatus), s.StartTime, s.EndTime)
			}
		case "jetjob.publish":
			publishes[id] = append(publishes[id], s)
		case "jetjob.run":
			runSpans[id] = s
		}
	}
	for id, node := range nodeRuns {
		pubs := publishes[id]
		if len(pubs) == 0 {
			t.Errorf("node %s's run %d has no publish span in the workflow run's trace: %s", node, id, describe(spans))
			continue
		}
		under := false
		r, ok := runSpans[id]
		for _, pub := range pubs {
			if pub.Parent.SpanID() != rootID {
				t.Errorf("node %s's run %d: publish span's parent %s, want the workflow run's span %s", node, id, pub.Parent.SpanID(), rootID)
			}
			under = under || (ok && r.Parent.SpanID() == pub.SpanContext.SpanID())
		}
		if !under {
			t.Errorf("node %s's run %d: the worker's span (found: %v) is under none of its %d publish spans", node, id, ok, len(pubs))
		}
	}
	// A node run's own id names no trace of its own.
	for id := range nodeRuns {
		for _, s := range exp.GetSpans() {
			if s.SpanContext.TraceID() == runtrace.RunTraceID(id) {
				t.Errorf("node run %d has a trace of its own (span %s), want its spans in the workflow run's", id, s.Name)
				break
			}
		}
	}
}
